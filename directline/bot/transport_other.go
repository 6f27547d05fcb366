//go:build !linux

package bot

import "net"

// canCheckIdle: without peerOpen's check every request goes through the fallback transport.
const canCheckIdle = false

func peerOpen(net.Conn) bool { return false }
