package main

import (
	"math/bits"
	"time"
)

// histSubBits sets the histogram's precision: 2^(histSubBits-1) buckets per
// power of two, so a recorded value is reported within 1/64 (1.6%) of its
// true value. Values below 2^histSubBits ns are exact.
const histSubBits = 7

// histMaxShift bounds the recordable range to about 2^40 ns (18 minutes);
// larger values are clamped into the last bucket (max stays exact).
const histMaxShift = 40 - histSubBits

const histBuckets = (histMaxShift+1)<<(histSubBits-1) + 1<<(histSubBits-1)

// histogram is a log-linear latency histogram in nanoseconds, in the spirit
// of HdrHistogram: fixed size (about 18 KiB), no allocation per record, so
// every worker owns one and they are merged at the end. Not safe for
// concurrent use.
type histogram struct {
	counts   [histBuckets]uint64
	n        uint64
	sum      float64
	min, max int64
}

func newHistogram() *histogram { return &histogram{min: -1} }

func histBucket(v int64) int {
	if v < 1<<histSubBits {
		if v < 0 {
			return 0
		}
		return int(v)
	}
	shift := bits.Len64(uint64(v)) - histSubBits
	if shift > histMaxShift {
		return histBuckets - 1
	}
	return shift<<(histSubBits-1) + int(v>>shift)
}

// histBucketMid returns a value in the middle of bucket i.
func histBucketMid(i int) int64 {
	if i < 1<<histSubBits {
		return int64(i)
	}
	shift := i>>(histSubBits-1) - 1
	mant := int64(i - shift<<(histSubBits-1))
	lo := mant << shift
	return lo + (int64(1)<<shift)/2
}

func (h *histogram) record(d time.Duration) {
	v := int64(d)
	h.counts[histBucket(v)]++
	h.n++
	h.sum += float64(v)
	if h.min < 0 || v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
}

func (h *histogram) merge(o *histogram) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.sum += o.sum
	if h.min < 0 || o.min < h.min {
		h.min = o.min
	}
	if o.max > h.max {
		h.max = o.max
	}
}

// quantile returns the value at quantile q (0..1), clamped to [min, max].
func (h *histogram) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q*float64(h.n) + 0.5)
	if rank < 1 {
		rank = 1
	}
	if rank > h.n {
		rank = h.n
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			v := histBucketMid(i)
			if v < h.min {
				v = h.min
			}
			if v > h.max {
				v = h.max
			}
			return time.Duration(v)
		}
	}
	return time.Duration(h.max)
}

// Latency is a histogram's summary, in milliseconds for JSON.
type Latency struct {
	Count  uint64  `json:"count"`
	MinMS  float64 `json:"min_ms"`
	MeanMS float64 `json:"mean_ms"`
	P50MS  float64 `json:"p50_ms"`
	P90MS  float64 `json:"p90_ms"`
	P99MS  float64 `json:"p99_ms"`
	MaxMS  float64 `json:"max_ms"`
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func (h *histogram) summary() Latency {
	if h.n == 0 {
		return Latency{}
	}
	return Latency{
		Count:  h.n,
		MinMS:  ms(time.Duration(h.min)),
		MeanMS: h.sum / float64(h.n) / 1e6,
		P50MS:  ms(h.quantile(0.50)),
		P90MS:  ms(h.quantile(0.90)),
		P99MS:  ms(h.quantile(0.99)),
		MaxMS:  ms(time.Duration(h.max)),
	}
}
