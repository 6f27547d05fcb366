//go:build !unix

package sortkeys

func processCPU() (int64, bool) { return 0, false }

func processFaults() (int64, bool) { return 0, false }
