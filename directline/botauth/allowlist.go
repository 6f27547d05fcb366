package botauth

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// AllowList is the set of networks whose unauthenticated calls to the Bot Connector routes are
// accepted (bots without an app id send no token, DIRECTLINE.md §2.3). The zero value allows
// nothing.
type AllowList struct {
	prefixes []netip.Prefix
}

// DefaultAllow is the --connector-allow default: loopback only.
const DefaultAllow = "127.0.0.0/8,::1"

// ParseAllowList parses --connector-allow values: comma-separated CIDRs ("10.0.0.0/8") or single
// addresses ("192.168.1.5", "::1"), possibly over several values (a repeated flag). No values, or
// only empty ones, mean DefaultAllow. An entry that is neither gives an error naming it.
func ParseAllowList(values ...string) (*AllowList, error) {
	var entries []string
	for _, v := range values {
		for e := range strings.SplitSeq(v, ",") {
			if e = strings.TrimSpace(e); e != "" {
				entries = append(entries, e)
			}
		}
	}
	if len(entries) == 0 {
		entries = strings.Split(DefaultAllow, ",")
	}
	l := &AllowList{}
	for _, e := range entries {
		var p netip.Prefix
		if strings.Contains(e, "/") {
			pp, err := netip.ParsePrefix(e)
			if err != nil {
				return nil, fmt.Errorf("botauth: --connector-allow entry %q is not a CIDR or IP address", e)
			}
			p = pp.Masked()
		} else {
			a, err := netip.ParseAddr(e)
			if err != nil {
				return nil, fmt.Errorf("botauth: --connector-allow entry %q is not a CIDR or IP address", e)
			}
			a = a.WithZone("")
			p = netip.PrefixFrom(a, a.BitLen())
		}
		// An IPv4-mapped IPv6 prefix is stored as its IPv4 form, as addresses are unmapped too.
		if p.Addr().Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		l.prefixes = append(l.prefixes, p)
	}
	return l, nil
}

// Allowed reports whether remoteAddr (an http.Request.RemoteAddr "host:port", or a bare address)
// lies in the list. IPv4-mapped IPv6 addresses match IPv4 entries; anything unparsable is refused.
func (l *AllowList) Allowed(remoteAddr string) bool {
	if l == nil {
		return false
	}
	host := remoteAddr
	if h, _, err := net.SplitHostPort(remoteAddr); err == nil {
		host = h
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	a = a.WithZone("").Unmap()
	for _, p := range l.prefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// String lists the entries, comma-separated, in the form ParseAllowList accepts.
func (l *AllowList) String() string {
	if l == nil {
		return ""
	}
	s := make([]string, len(l.prefixes))
	for i, p := range l.prefixes {
		s[i] = p.String()
	}
	return strings.Join(s, ",")
}
