# bench/cgroup.sh — memory cgroups for the benchmarks that run a command
# inside a memory limit (scale.sh, features.sh). Sourced; the caller
# defines note MESSAGE. cgroup v1 (memory.limit_in_bytes, + memsw where
# present) or v2 (memory.max, memory.swap.max 0).

# cgroup_make NAME LIMIT: creates a memory cgroup, sets CUR_CGROUP and
# CG_KIND (v1|v2); returns 1 with CG_WHY set where it cannot.
cgroup_make() {
  local name=$1 lim=$2 d
  CG_WHY=""
  if [[ -d /sys/fs/cgroup/memory && -f /sys/fs/cgroup/memory/memory.limit_in_bytes ]]; then
    d=/sys/fs/cgroup/memory/$name
    if ! mkdir -p "$d" 2>/dev/null; then CG_WHY="cannot create $d (not root?)"; return 1; fi
    CUR_CGROUP=$d CG_KIND=v1
    if ! echo "$lim" > "$d/memory.limit_in_bytes" 2>/dev/null; then CG_WHY="cannot write $d/memory.limit_in_bytes"; return 1; fi
    # Swap would let the group exceed the limit: bound memory+swap too.
    [[ -f "$d/memory.memsw.limit_in_bytes" ]] && { echo "$lim" > "$d/memory.memsw.limit_in_bytes" 2>/dev/null || true; }
    return 0
  fi
  local root
  root=$(awk '$3 == "cgroup2" {print $2; exit}' /proc/mounts)
  if [[ -z "$root" ]]; then CG_WHY="no cgroup v1 memory controller and no cgroup v2 mount"; return 1; fi
  if ! grep -qw memory "$root/cgroup.controllers" 2>/dev/null; then CG_WHY="$root has no memory controller"; return 1; fi
  grep -qw memory "$root/cgroup.subtree_control" 2>/dev/null || echo +memory > "$root/cgroup.subtree_control" 2>/dev/null || true
  d=$root/$name
  if ! mkdir -p "$d" 2>/dev/null; then CG_WHY="cannot create $d (not root, or not delegated)"; return 1; fi
  CUR_CGROUP=$d CG_KIND=v2
  if ! echo "$lim" > "$d/memory.max" 2>/dev/null; then CG_WHY="cannot write $d/memory.max (memory not in $root/cgroup.subtree_control?)"; return 1; fi
  [[ -f "$d/memory.swap.max" ]] && { echo 0 > "$d/memory.swap.max" 2>/dev/null || true; }
  return 0
}
# cgroup_stats: CG_PEAK (bytes, page cache included), CG_OOM (OOM kills).
cgroup_stats() {
  local d=$CUR_CGROUP
  if [[ $CG_KIND == v1 ]]; then
    CG_PEAK=$(cat "$d/memory.max_usage_in_bytes")
    CG_OOM=$(awk '$1 == "oom_kill" {print $2}' "$d/memory.oom_control")
    [[ -n "$CG_OOM" ]] || CG_OOM=$(cat "$d/memory.failcnt")
  else
    CG_PEAK=$(cat "$d/memory.peak" 2>/dev/null || echo nan)
    CG_OOM=$(awk '$1 == "oom_kill" {print $2}' "$d/memory.events")
  fi
}
cgroup_remove() {
  [[ -n "$CUR_CGROUP" ]] || return 0
  [[ $CG_KIND == v1 && -f "$CUR_CGROUP/memory.force_empty" ]] && { echo 0 > "$CUR_CGROUP/memory.force_empty" 2>/dev/null || true; }
  rmdir "$CUR_CGROUP" 2>/dev/null || note "could not remove cgroup $CUR_CGROUP"
  CUR_CGROUP=""
}

