package findings

// Inversions counts the pairs i < j with ranks[i] > ranks[j]: for ranks given as each displayed
// activity's place in the service's order, the pairs shown in the opposite order to the server.
// Merge sort, O(n log n) time and O(n) extra space; ranks is not modified.
func Inversions(ranks []int) int64 {
	a := append([]int(nil), ranks...)
	buf := make([]int, len(a))
	return mergeCount(a, buf)
}

func mergeCount(a, buf []int) int64 {
	if len(a) < 2 {
		return 0
	}
	mid := len(a) / 2
	n := mergeCount(a[:mid], buf[:mid]) + mergeCount(a[mid:], buf[mid:])
	i, j, k := 0, mid, 0
	for i < mid && j < len(a) {
		if a[j] < a[i] {
			// Every element left in the first half is greater than a[j].
			n += int64(mid - i)
			buf[k] = a[j]
			j++
		} else {
			buf[k] = a[i]
			i++
		}
		k++
	}
	k += copy(buf[k:], a[i:mid])
	copy(buf[k:], a[j:])
	copy(a, buf[:len(a)])
	return n
}

// Moved marks a smallest set of entries whose removal leaves ranks increasing: the complement of
// one longest increasing subsequence (patience sorting, O(n log n)). Those are the activities a
// reader sees as moved; the others keep the service's relative order.
func Moved(ranks []int) []bool {
	n := len(ranks)
	moved := make([]bool, n)
	tails := []int{}       // tails[l] = index of the smallest tail of an increasing run of length l+1
	prev := make([]int, n) // predecessor index in the run ending at i
	for i, r := range ranks {
		lo, hi := 0, len(tails)
		for lo < hi {
			m := (lo + hi) / 2
			if ranks[tails[m]] < r {
				lo = m + 1
			} else {
				hi = m
			}
		}
		prev[i] = -1
		if lo > 0 {
			prev[i] = tails[lo-1]
		}
		if lo == len(tails) {
			tails = append(tails, i)
		} else {
			tails[lo] = i
		}
	}
	for i := range moved {
		moved[i] = true
	}
	if len(tails) > 0 {
		for i := tails[len(tails)-1]; i >= 0; i = prev[i] {
			moved[i] = false
		}
	}
	return moved
}
