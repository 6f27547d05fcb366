//go:build !amd64

package jsonscan

func indexQuote(d []byte, i int) int { return indexQuoteWords(d, i) }

func indexNotPlain(d []byte, i int) int { return indexNotPlainWords(d, i) }

func compactKey(d []byte, i int, begun, values bool) (start, end, value, vend int) {
	return compactKeyWords(d, i, begun, values)
}

func compactRun(o *Object, run []Span) (n int, done bool) { return compactRunWords(o, run) }
