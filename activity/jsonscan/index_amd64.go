package jsonscan

//go:noescape
func indexQuote(d []byte, i int) int

//go:noescape
func indexNotPlain(d []byte, i int) int

//go:noescape
func compactKey(d []byte, i int, begun, values bool) (start, end, value, vend int)

//go:noescape
func compactRun(o *Object, run []Span) (n int, done bool)
