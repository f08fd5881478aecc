module github.com/streamsampler/streamsampler

go 1.26.8

require (
	github.com/edsrzf/mmap-go v1.2.0
	github.com/klauspost/compress v1.20.3
	github.com/spf13/cobra v1.10.2
	github.com/spf13/pflag v1.0.9
	golang.org/x/sys v0.49.0
)

require github.com/inconshreveable/mousetrap v1.1.0 // indirect
