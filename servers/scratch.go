package servers

import (
	"os"
	"syscall"
)

// sharedMemory is Linux's memory-backed file system, present on every
// Debian machine and container.
const sharedMemory = "/dev/shm"

// memoryRoom is the room memoryDir asks of sharedMemory: etcd makes its
// write-ahead log in segments of 64 MB, a member two at once, and a
// container's /dev/shm is 64 MiB unless it was given more.
const memoryRoom = 512 << 20

// memoryDir makes a new directory for a started server's data in memory
// (/dev/shm) when the machine has one with memoryRoom free, else in the
// temporary directory.
// A server that syncs every write to disk (etcd's write-ahead log) is
// then bounded by the processor, not by the disk: on this project's
// machine a truth-table sale of the etcd lock took half the time. A
// member killed and started again finds its data where it left it;
// only the machine's crash would lose it, and the data lives for one
// run.
func memoryDir(pattern string) (string, error) {
	var st syscall.Statfs_t
	if syscall.Statfs(sharedMemory, &st) == nil && st.Bavail*uint64(st.Bsize) >= memoryRoom {
		if dir, err := os.MkdirTemp(sharedMemory, pattern); err == nil {
			return dir, nil
		}
	}
	return os.MkdirTemp("", pattern)
}
