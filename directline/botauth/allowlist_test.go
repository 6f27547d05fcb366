package botauth

import "testing"

func TestAllowList(t *testing.T) {
	cases := []struct {
		name    string
		values  []string
		allowed []string
		refused []string
	}{
		{"default is loopback", nil,
			[]string{"127.0.0.1:5000", "127.1.2.3:1", "[::1]:80", "::1", "[::ffff:127.0.0.1]:9"},
			[]string{"10.0.0.1:80", "[::2]:80", "192.168.0.1", "", "garbage", "localhost:80"}},
		{"empty values mean default", []string{"", " , "},
			[]string{"127.0.0.1:1"}, []string{"10.0.0.1:1"}},
		{"CIDRs and single addresses", []string{"10.0.0.0/8, 192.168.1.5", "fd00::/8"},
			[]string{"10.200.0.1:443", "192.168.1.5:1", "[fd12::1]:1", "[fd00::1%eth0]:1"},
			[]string{"192.168.1.6:1", "127.0.0.1:1", "[fe80::1]:1", "11.0.0.1:1"}},
		{"unmasked CIDR is masked", []string{"172.16.5.4/12"},
			[]string{"172.31.255.255:1", "172.16.0.0:1"}, []string{"172.32.0.0:1"}},
		{"IPv4-mapped entry matches IPv4", []string{"::ffff:10.1.0.0/112"},
			[]string{"10.1.2.3:1"}, []string{"10.2.0.1:1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, err := ParseAllowList(tc.values...)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range tc.allowed {
				if !l.Allowed(a) {
					t.Errorf("%q refused by %s", a, l)
				}
			}
			for _, a := range tc.refused {
				if l.Allowed(a) {
					t.Errorf("%q allowed by %s", a, l)
				}
			}
		})
	}
}

func TestAllowListRejectsBadEntries(t *testing.T) {
	for _, v := range []string{"10.0.0.0/33", "localhost", "1.2.3", "10.0.0.0/8,nope", "::1/129"} {
		if _, err := ParseAllowList(v); err == nil {
			t.Errorf("%q accepted", v)
		}
	}
}

func TestAllowListZeroAndNilAllowNothing(t *testing.T) {
	var nilList *AllowList
	if nilList.Allowed("127.0.0.1:1") || (&AllowList{}).Allowed("127.0.0.1:1") {
		t.Fatal("empty list allowed loopback")
	}
}

func TestAllowListStringRoundTrips(t *testing.T) {
	l, err := ParseAllowList("10.0.0.1, 10.1.0.0/16,::1")
	if err != nil {
		t.Fatal(err)
	}
	again, err := ParseAllowList(l.String())
	if err != nil || again.String() != l.String() || l.String() != "10.0.0.1/32,10.1.0.0/16,::1/128" {
		t.Fatalf("%q -> %q, %v", l, again, err)
	}
}

func FuzzParseAllowList(f *testing.F) {
	for _, s := range []string{"", DefaultAllow, "10.0.0.0/8, 192.168.1.5", "::ffff:10.0.0.0/104", "x/y"} {
		f.Add(s, "127.0.0.1:80")
	}
	f.Fuzz(func(t *testing.T, spec, addr string) {
		l, err := ParseAllowList(spec)
		if err != nil {
			return
		}
		again, err := ParseAllowList(l.String())
		if err != nil || again.Allowed(addr) != l.Allowed(addr) {
			t.Fatalf("%q: round trip %q disagrees on %q (%v)", spec, l, addr, err)
		}
	})
}
