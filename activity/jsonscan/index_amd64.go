package jsonscan

//go:noescape
func indexQuote(d []byte, i int) int

//go:noescape
func indexNotPlain(d []byte, i int) int

//go:noescape
func compactKey(d []byte, i int, begun, values bool) (start, end, value, vend int)

//go:noescape
func compactRun(d []byte, i int, begun bool, run []Span) (n, next int, closed bool)
