package main

import (
	"os"
	"runtime"
	"strconv"
	"strings"
)

// Under torchrun every rank of a host starts its own server (the Python
// loaders do): each follows its rank's GPU and takes its share of the
// host's cores, instead of every rank on GPU 0 and every server sizing
// its worker pools for all the cores.

// rankDevice is the CUDA device a rank's --backend gpu uses by default:
// $LOCAL_RANK (0 without it), counted among the devices
// $CUDA_VISIBLE_DEVICES leaves visible (a launcher that gives each rank
// one device makes it device 0).
func rankDevice() (int, error) {
	local, err := envInt("LOCAL_RANK", 0)
	if err != nil {
		return 0, err
	}
	if vis, ok := os.LookupEnv("CUDA_VISIBLE_DEVICES"); ok && vis != "" {
		if n := len(strings.Split(vis, ",")); local >= n {
			return local % n, nil
		}
	}
	return local, nil
}

// cpuShare is GOMAXPROCS for one of $LOCAL_WORLD_SIZE ranks on a host of
// ncpu cores: an equal share (at least one), unless $GOMAXPROCS says.
func cpuShare(env, localWorld string, ncpu int) (int, bool) {
	if env != "" {
		return 0, false
	}
	w, err := strconv.Atoi(localWorld)
	if err != nil || w <= 1 {
		return 0, false
	}
	return max(1, ncpu/w), true
}

// shareCPUs applies cpuShare to this process.
func shareCPUs() {
	if n, ok := cpuShare(os.Getenv("GOMAXPROCS"), os.Getenv("LOCAL_WORLD_SIZE"), runtime.NumCPU()); ok {
		runtime.GOMAXPROCS(n)
	}
}
