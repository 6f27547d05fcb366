package directline

import (
	"strconv"
)

// ParseWatermark parses a Direct Line watermark as this service issues it: the decimal seq of the
// last log entry the client has. "" (DirectLineJS sends an empty watermark= on first use) and "-"
// (the hosted service's "no watermark" in stream URLs) mean none: ok is false. Anything else that
// is not a plain unsigned decimal fitting in 64 bits (a sign, spaces, exponents, hex) is
// ErrBadArgument.
func ParseWatermark(s string) (watermark uint64, ok bool, err error) {
	if s == "" || s == "-" {
		return 0, false, nil
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false, ErrBadArgument.Msg("watermark must be a non-negative integer")
		}
	}
	w, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, false, ErrBadArgument.Msg("watermark out of range")
	}
	return w, true, nil
}

// formatWatermark is the inverse of ParseWatermark for a present watermark.
func formatWatermark(w uint64) string { return strconv.FormatUint(w, 10) }
