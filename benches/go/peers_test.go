package peers

import (
	"os"
	"testing"
)

// load returns every workload's frame, checked; the test is skipped when the frames were not
// dumped (benches/peers.sh and the CI line in BENCHMARKS.md dump them first).
func load(tb testing.TB) map[string][]byte {
	if _, err := os.Stat(FramesDir()); err != nil {
		tb.Skipf("no frames in %s: run `cargo run --release --example bench_counts -- dump %s`", FramesDir(), FramesDir())
	}
	frames := map[string][]byte{}
	for _, s := range Specs {
		frame, err := Load(s)
		if err != nil {
			tb.Fatal(err)
		}
		if err := Check(s, frame); err != nil {
			tb.Fatal(err)
		}
		frames[s.ID] = frame
	}
	return frames
}

// TestFrames: digests, and kmsg's re-encode equal to each frame (cheap; no timing).
func TestFrames(t *testing.T) {
	load(t)
}

func BenchmarkPeers(b *testing.B) {
	frames := load(b)
	for _, s := range Specs[:5] {
		frame := frames[s.ID]
		// A fresh message per iteration: what a client decoding a response has.
		b.Run(s.ID+"/decode", func(b *testing.B) {
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if err := s.New().ReadFrom(frame); err != nil {
					b.Fatal(err)
				}
			}
		})
		// Strings alias the frame instead of being copied.
		b.Run(s.ID+"/decode_unsafe", func(b *testing.B) {
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if err := s.New().UnsafeReadFrom(frame); err != nil {
					b.Fatal(err)
				}
			}
		})
		m := s.New()
		if err := m.ReadFrom(frame); err != nil {
			b.Fatal(err)
		}
		dst := make([]byte, 0, len(frame))
		b.Run(s.ID+"/encode", func(b *testing.B) {
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				dst = m.AppendTo(dst[:0])
			}
		})
	}
	frame := frames["W5"]
	b.Run("W5/decode", func(b *testing.B) {
		b.SetBytes(int64(len(frame)))
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if err := DecodeBatch(frame); err != nil {
				b.Fatal(err)
			}
		}
	})
	recs := Records()
	dst := make([]byte, 0, len(frame))
	b.Run("W5/encode", func(b *testing.B) {
		b.SetBytes(int64(len(frame)))
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			dst = EncodeBatch(dst, recs)
		}
	})
}
