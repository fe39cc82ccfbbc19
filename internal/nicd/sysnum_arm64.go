//go:build linux

package nicd

// The system calls package syscall has no number for on linux/arm64.
const (
	sysProcessVMReadv  = 270
	sysProcessVMWritev = 271
	sysMemfdCreate     = 279
)
