package bot

import (
	"net"
	"syscall"
)

// canCheckIdle: peerOpen can tell a closed idle connection here.
const canCheckIdle = true

// peerOpen reports whether an idle connection can carry a request: the server has not closed it
// (a keep-alive timeout, a restart) and sent nothing unasked. One non-blocking peek, no wait.
func peerOpen(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	open := false
	var b [1]byte
	err = rc.Read(func(fd uintptr) bool {
		_, _, rerr := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		// Nothing to read is an open, quiet connection; 0 bytes (the server's FIN), data or
		// another error make a connection not to use.
		open = rerr == syscall.EAGAIN
		return true
	})
	return err == nil && open
}
