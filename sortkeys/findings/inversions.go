package findings

// A Span is where a bubble's activities stand in the service's order: the 0-based places of the
// first and the last delivered activity among its revisions (First <= Last; equal for a bubble
// with one). A livestream's bubble spans its revisions, which Web Chat shows at the place of the
// first (gen-a, gen-b, and gen-c until the final) or of the final (gen-c): either is in the
// service's order, so neither counts as a move.
type Span struct{ First, Last int }

// inverted reports whether a bubble shown above another (upper) is in the opposite order to the
// server: the service's order puts every activity of the lower one before any of the upper one.
func inverted(upper, lower Span) bool { return lower.Last < upper.First }

// InvertedPairs counts the pairs of spans, given in screen order, shown in the opposite order to
// the server (inverted). Places are below n. For spans of one place each it is the number of
// inversions of a permutation. O(len(spans) log n) time, O(n) space.
func InvertedPairs(spans []Span, n int) int64 {
	firsts := newCounter(n)
	var pairs int64
	for k, s := range spans {
		// The spans above s whose first place is after its last.
		pairs += int64(k - firsts.upTo(s.Last))
		firsts.add(s.First, 1)
	}
	return pairs
}

// Moved marks a smallest set of spans, given in screen order, whose removal leaves no pair
// inverted: the complement of one longest run of spans that keeps the service's order. Those
// are the bubbles a reader sees as moved.
//
// A run keeps the order when each span can be given a place within it so that the places never
// decrease down the screen. The longest run is found as a longest increasing subsequence is,
// with tails[L], the least last place of a run of length L, kept as a set of places: a span
// [a, b] extends every run whose tail is at most b, to the tail max(tail, a), which comes down
// to adding a to the set and removing the least place above b. The run itself is read back from
// the set's last place: a place a span added stands for the run that span ended, extended by
// every later span whose interval holds that place, back to the place that preceded it in the
// set when it was added. O(len(spans) log n) time, O(n) space, places distinct across spans
// (a span's First and Last may be one place).
func Moved(spans []Span, n int) []bool {
	places := newCounter(n)
	adder := make([]int, n) // the span that added each place in the set
	before := make([]int, len(spans))
	for k, s := range spans {
		before[k] = -1
		if c := places.upTo(s.First - 1); c > 0 {
			before[k] = adder[places.nth(c)]
		}
		places.add(s.First, 1)
		adder[s.First] = k
		if c := places.upTo(s.Last); c < places.total {
			places.add(places.nth(c+1), -1)
		}
	}
	moved := make([]bool, len(spans))
	for k := range moved {
		moved[k] = true
	}
	if places.total == 0 {
		return moved
	}
	end := len(spans) - 1
	for k := adder[places.nth(places.total)]; k >= 0; k = before[k] {
		v := spans[k].First
		for j := end; j > k; j-- {
			if spans[j].First < v && v <= spans[j].Last {
				moved[j] = false
			}
		}
		moved[k] = false
		end = k - 1
	}
	return moved
}

// counter is a Fenwick tree of counts over places 0..n-1.
type counter struct {
	tree  []int
	total int
}

func newCounter(n int) *counter { return &counter{tree: make([]int, n+1)} }

func (c *counter) add(place, d int) {
	c.total += d
	for i := place + 1; i < len(c.tree); i += i & -i {
		c.tree[i] += d
	}
}

// upTo is the count at places 0..place.
func (c *counter) upTo(place int) int {
	s := 0
	for i := min(place+1, len(c.tree)-1); i > 0; i -= i & -i {
		s += c.tree[i]
	}
	return s
}

// nth is the place of the k-th counted item (1-based), the counts being 0 or 1.
func (c *counter) nth(k int) int {
	pos := 0
	for step := highBit(len(c.tree) - 1); step > 0; step >>= 1 {
		if next := pos + step; next < len(c.tree) && c.tree[next] < k {
			pos = next
			k -= c.tree[next]
		}
	}
	return pos
}

func highBit(n int) int {
	b := 1
	for b*2 <= n {
		b *= 2
	}
	if n == 0 {
		return 0
	}
	return b
}
