// Package peers runs franz-go's kmsg on the benchmark frames W1-W5 of WORKLOADS.md, as written by
// `cargo run --release --example bench_counts -- dump DIR` (see BENCHMARKS.md, benches/peers.sh).
//
// Every frame's length and FNV-1a 64 digest is checked here again, and kmsg's re-encode of what it
// decoded must equal the frame byte for byte, before anything is timed (peers_test.go).
package peers

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/bits"
	"os"
	"path/filepath"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Spec is one workload: its frame's file, length and digest, and the kmsg message for it.
type Spec struct {
	ID      string
	Len     int
	FNV1a64 uint64
	Version int16
	// New returns an empty message of this workload's type with Version set (nil for W5).
	New func() Message
}

// Message is what the generated kmsg requests and responses share.
type Message interface {
	AppendTo([]byte) []byte
	ReadFrom([]byte) error
	UnsafeReadFrom([]byte) error
}

// Specs lists the workloads in table order.
var Specs = []Spec{
	{"W1", 456_160, 0xe9b80e55ae2f48e0, 12, func() Message { m := kmsg.NewPtrMetadataResponse(); m.Version = 12; return m }},
	{"W2", 1_639_339, 0x77a546b9c2d579a0, 9, func() Message { m := kmsg.NewPtrProduceRequest(); m.Version = 9; return m }},
	{"W3", 6_557_642, 0x4f882f929bc6e0c7, 12, func() Message { m := kmsg.NewPtrFetchResponse(); m.Version = 12; return m }},
	{"W4a", 26, 0xe29dcd9f20225244, 3, func() Message { m := kmsg.NewPtrApiVersionsRequest(); m.Version = 3; return m }},
	{"W4b", 428, 0xdbbd8f41a26a08a4, 3, func() Message { m := kmsg.NewPtrApiVersionsResponse(); m.Version = 3; return m }},
	{"W5", 138_933, 0x5545403253dc18a5, 2, nil},
}

// FramesDir is where the frames are read from: $KWIRE_FRAMES, or target/peers/frames of the
// repository (this package sits in benches/go).
func FramesDir() string {
	if dir := os.Getenv("KWIRE_FRAMES"); dir != "" {
		return dir
	}
	return filepath.Join("..", "..", "target", "peers", "frames")
}

func fnv1a64(data []byte) uint64 {
	h := uint64(0xcbf29ce484222325)
	for _, b := range data {
		h = (h ^ uint64(b)) * 0x100000001b3
	}
	return h
}

// Load reads the frame of s and checks its length and digest.
func Load(s Spec) ([]byte, error) {
	frame, err := os.ReadFile(filepath.Join(FramesDir(), s.ID+".bin"))
	if err != nil {
		return nil, err
	}
	if d := fnv1a64(frame); len(frame) != s.Len || d != s.FNV1a64 {
		return nil, fmt.Errorf("%s: %d bytes with fnv1a64 %016x, expected %d bytes with %016x", s.ID, len(frame), d, s.Len, s.FNV1a64)
	}
	return frame, nil
}

// Check decodes the frame with kmsg and re-encodes it; the result must equal the frame.
func Check(s Spec, frame []byte) error {
	if s.New == nil {
		return CheckBatch(frame)
	}
	m := s.New()
	if err := m.ReadFrom(frame); err != nil {
		return fmt.Errorf("%s: kmsg ReadFrom: %w", s.ID, err)
	}
	if out := m.AppendTo(nil); !bytes.Equal(out, frame) {
		return fmt.Errorf("%s: kmsg re-encode differs from the frame (%d bytes vs %d)", s.ID, len(out), len(frame))
	}
	return nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// W5 values, as in WORKLOADS.md.
const (
	baseTimestamp = 1_700_000_000_000
	numRecords    = 1000
	headerSize    = 61 // a v2 batch header; the CRC covers bytes 21..end
	crcStart      = 21
)

// Sink keeps the decoded values alive, so the compiler cannot drop the reads.
var Sink uint64

// DecodeBatch is W5's decode: the batch header with kmsg.RecordBatch (its CRC-32C checked, as
// kwire's decode and franz-go's consumer do), then every record with kmsg.Record, touching
// offset, timestamp, key, value and headers.
func DecodeBatch(frame []byte) error {
	var batch kmsg.RecordBatch
	if err := batch.ReadFrom(frame); err != nil {
		return err
	}
	if batch.Magic != 2 || crc32.Checksum(frame[crcStart:], castagnoli) != uint32(batch.CRC) {
		return fmt.Errorf("W5: bad magic or CRC")
	}
	rest := batch.Records
	var sum uint64
	for i := int32(0); i < batch.NumRecords; i++ {
		// kmsg.Record reads one record but does not say how long it was: its length varint does.
		l, n := binary.Varint(rest)
		if n <= 0 || l < 0 || int64(len(rest)-n) < l {
			return fmt.Errorf("W5: record %d truncated", i)
		}
		var r kmsg.Record
		if err := r.ReadFrom(rest[:n+int(l)]); err != nil {
			return err
		}
		rest = rest[n+int(l):]
		offset := batch.FirstOffset + int64(r.OffsetDelta)
		ts := batch.FirstTimestamp + r.TimestampDelta64
		sum += uint64(offset) + uint64(ts) + uint64(len(r.Key)) + uint64(len(r.Value))
		for _, h := range r.Headers {
			sum += uint64(len(h.Key)) + uint64(len(h.Value))
		}
	}
	if len(rest) != 0 {
		return fmt.Errorf("W5: %d bytes after the last record", len(rest))
	}
	Sink += sum
	return nil
}

// splitMix64 is WORKLOADS.md's generator; W5's values are its only draws (seed 5).
type splitMix64 uint64

func (s *splitMix64) next() uint64 {
	*s += 0x9E3779B97F4A7C15
	z := uint64(*s)
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

// bytes is `bytes(n)`: successive draws little-endian, the last one cut short.
func (s *splitMix64) bytes(n int) []byte {
	out := make([]byte, 0, n+8)
	for len(out) < n {
		out = binary.LittleEndian.AppendUint64(out, s.next())
	}
	return out[:n]
}

// Records returns W5's records as kmsg values built from WORKLOADS.md (not from the frame), with
// Length left for EncodeBatch to compute.
func Records() []kmsg.Record {
	r := splitMix64(5)
	recs := make([]kmsg.Record, numRecords)
	for i := range recs {
		recs[i] = kmsg.Record{
			TimestampDelta64: int64(i),
			OffsetDelta:      int32(i),
			Key:              []byte(fmt.Sprintf("key-%06d", i)),
			Value:            r.bytes(100),
			Headers:          []kmsg.Header{{Key: "trace-id", Value: binary.BigEndian.AppendUint64(nil, uint64(i))}},
		}
	}
	return recs
}

// varintLen is the size of v as a zigzag varint (kmsg has no size functions).
func varintLen(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	return (bits.Len64(u|1) + 6) / 7
}

// recordLen is what goes in a record's Length field: everything after it.
func recordLen(r *kmsg.Record) int32 {
	n := 1 + varintLen(r.TimestampDelta64) + varintLen(int64(r.OffsetDelta))
	n += varintLen(int64(len(r.Key))) + len(r.Key) + varintLen(int64(len(r.Value))) + len(r.Value)
	n += varintLen(int64(len(r.Headers)))
	for i := range r.Headers {
		h := &r.Headers[i]
		n += varintLen(int64(len(h.Key))) + len(h.Key) + varintLen(int64(len(h.Value))) + len(h.Value)
	}
	return int32(n)
}

// EncodeBatch is W5's encode: kmsg has no batch builder (franz-go's producer builds batches in
// kgo, internally), so this does what that builder does with kmsg's pieces: each record's length,
// kmsg.Record.AppendTo for the records, kmsg.RecordBatch.AppendTo for the header, CRC-32C patched.
func EncodeBatch(dst []byte, recs []kmsg.Record) []byte {
	dst = append(dst[:0], make([]byte, headerSize)...)
	for i := range recs {
		r := &recs[i]
		r.Length = recordLen(r)
		dst = r.AppendTo(dst)
	}
	last := &recs[len(recs)-1]
	batch := kmsg.RecordBatch{
		FirstOffset:     0,
		Length:          int32(len(dst) - 12),
		Magic:           2,
		LastOffsetDelta: last.OffsetDelta,
		FirstTimestamp:  baseTimestamp,
		MaxTimestamp:    baseTimestamp + last.TimestampDelta64,
		ProducerID:      -1,
		ProducerEpoch:   -1,
		FirstSequence:   -1,
		NumRecords:      int32(len(recs)),
	}
	var head [headerSize]byte
	batch.AppendTo(head[:0])
	copy(dst, head[:])
	binary.BigEndian.PutUint32(dst[17:], crc32.Checksum(dst[crcStart:], castagnoli))
	return dst
}

// CheckBatch checks W5 both ways: the decode visits 1000 records, and EncodeBatch rebuilds the
// frame byte for byte.
func CheckBatch(frame []byte) error {
	if err := DecodeBatch(frame); err != nil {
		return err
	}
	if out := EncodeBatch(nil, Records()); !bytes.Equal(out, frame) {
		return fmt.Errorf("W5: kmsg-built batch differs from the frame (%d bytes vs %d)", len(out), len(frame))
	}
	return nil
}
