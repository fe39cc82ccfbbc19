//go:build linux

package nicd

// The system calls package syscall has no number for on linux/amd64.
const (
	sysProcessVMReadv  = 310
	sysProcessVMWritev = 311
	sysMemfdCreate     = 319
)
