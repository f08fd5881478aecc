// Package atomicfile replaces files and directories so that a reader, or
// the file system after a crash, sees either the old content or the whole
// new content, never a part.
//
// The recipe is the usual one: write a temporary beside the destination
// (same directory, hence same file system, so rename(2) is atomic), fsync
// it, rename it over the destination, and fsync the directory so that the
// rename itself is durable. Without the file fsync a crash can leave a
// renamed but empty file (ext4 data=ordered included); without the
// directory fsync it can leave the old name.
//
// Directory fsync errors are returned, never ignored: a caller that was
// told the write is durable must be able to rely on it.
//
// Temporaries are named "." + base + ".tmp-" + a random suffix, hidden and
// recognisable, so that code cleaning up after a crash can find them.
// Temporary directories made by TempDir also record their owning process
// (pid, start time, host) in that suffix: RemoveStaleTemps removes
// those whose owner is gone and never one that a running process may
// still finish.
package atomicfile
