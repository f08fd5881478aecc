// Package hugepages asks the kernel to back large, randomly accessed
// arrays with transparent huge pages.
//
// An epoch's tables (the dense relabel table, the row index, the samples)
// and a build's offsets are hundreds of megabytes read and written at
// random: on 4 KiB pages nearly every access misses the TLB, and under
// virtualisation each miss is a two-level page walk. On 2 MiB pages the
// same array needs 512 times fewer TLB entries and its first touch 512
// times fewer page faults. Where transparent huge pages are in "madvise"
// mode (the default of many distributions) a region must ask for them.
package hugepages

// MinBytes is the size from which Advise asks for huge pages: below a
// few huge pages the array fits the TLB's reach anyway, and asking costs
// a system call.
const MinBytes = 8 << 20

// size is the huge page size Advise aligns to.
const size = 2 << 20
