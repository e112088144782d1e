// franz-go (kgo) in the client benchmark of issue 27. The arguments, payloads, digest, CPU
// counters and result line are those of ../src/common.rs, in Go:
//
//	kgobench produce BOOTSTRAP TOPIC COUNT SIZE none|lz4|zstd all|1 RATE
//	kgobench consume BOOTSTRAP TOPIC COUNT SIZE PARTITIONS
package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

const poolBytes = 1 << 20

type pool struct {
	size, slots int
	bytes       []byte
	hashes      []uint64
}

func newPool(size int) *pool {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	slots := poolBytes / size
	if slots < 1 {
		slots = 1
	}
	b := make([]byte, slots*size)
	x := uint64(0x9E3779B97F4A7C15)
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = alphabet[x>>58]
	}
	p := &pool{size: size, slots: slots, bytes: b, hashes: make([]uint64, slots)}
	for s := 0; s < slots; s++ {
		p.hashes[s] = hash(b[s*size : (s+1)*size])
	}
	return p
}

func (p *pool) value(i uint64) []byte {
	s := int(i % uint64(p.slots))
	return p.bytes[s*p.size : (s+1)*p.size]
}

func (p *pool) hashOf(i uint64) uint64 { return p.hashes[i%uint64(p.slots)] }

func hash(v []byte) uint64 {
	const prime = 0x00000100000001B3
	h := uint64(0xCBF29CE484222325) ^ uint64(len(v))
	n := len(v) / 8 * 8
	for i := 0; i < n; i += 8 {
		h = (h ^ binary.LittleEndian.Uint64(v[i:])) * prime
	}
	for _, b := range v[n:] {
		h = (h ^ uint64(b)) * prime
	}
	h ^= h >> 33
	h *= 0xFF51AFD7ED558CCD
	h ^= h >> 33
	h *= 0xC4CEB9FE1A85EC53
	return h ^ (h >> 33)
}

// cpuOf: user + system CPU seconds of a process from /proc/PID/stat (ticks of 1/100 s).
func cpuOf(pid string) float64 {
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0
	}
	s := string(stat)
	f := strings.Split(s[strings.LastIndexByte(s, ')')+2:], " ")
	u, _ := strconv.ParseFloat(f[11], 64)
	k, _ := strconv.ParseFloat(f[12], 64)
	return (u + k) / 100
}

func brokerCPU() float64 {
	sum := 0.0
	for _, p := range strings.Split(os.Getenv("BENCH_BROKER_PIDS"), ",") {
		if p != "" {
			sum += cpuOf(p)
		}
	}
	return sum
}

type phase struct {
	start       time.Time
	cpu, broker float64
}

func startPhase() phase { return phase{time.Now(), cpuOf("self"), brokerCPU()} }

func (p phase) report(role string, count, bytes, digest uint64, extra string) {
	fmt.Printf("RESULT client=kgo role=%s count=%d bytes=%d digest=%016x secs=%.4f cpu=%.2f broker_cpu=%.2f%s\n",
		role, count, bytes, digest, time.Since(p.start).Seconds(), cpuOf("self")-p.cpu, brokerCPU()-p.broker, extra)
}

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "FAIL: "+format+"\n", a...)
	os.Exit(1)
}

func num(s string) uint64 {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		fail("bad number %q", s)
	}
	return n
}

func dueNs(i, rate uint64) uint64 {
	if rate == 0 {
		return 0
	}
	return uint64(float64(i) * 1e9 / float64(rate))
}

// percentiles: nearest rank over the sorted latencies (µs), as the Java program does.
func percentiles(us []uint64) string {
	sort.Slice(us, func(a, b int) bool { return us[a] < us[b] })
	q := func(p float64) uint64 {
		if len(us) == 0 {
			return 0
		}
		k := int(p*float64(len(us))+0.999999) - 1
		if k < 0 {
			k = 0
		}
		return us[k]
	}
	return fmt.Sprintf(" p50_us=%d p99_us=%d p999_us=%d", q(0.5), q(0.99), q(0.999))
}

func main() {
	a := os.Args[1:]
	if len(a) < 6 {
		fail("usage: produce BOOTSTRAP TOPIC COUNT SIZE none|lz4|zstd all|1 RATE | consume BOOTSTRAP TOPIC COUNT SIZE PARTITIONS")
	}
	switch a[0] {
	case "produce":
		if len(a) < 8 || (a[6] != "all" && a[6] != "1") {
			fail("usage: produce BOOTSTRAP TOPIC COUNT SIZE none|lz4|zstd all|1 RATE")
		}
		produce(a[1], a[2], num(a[3]), int(num(a[4])), a[5], a[6] == "all", num(a[7]))
	case "consume":
		consume(a[1], a[2], num(a[3]), int(num(a[4])), int32(num(a[5])))
	default:
		fail("unknown role %s", a[0])
	}
}

func produce(bootstrap, topic string, count uint64, size int, compression string, acksAll bool, rate uint64) {
	opts := []kgo.Opt{
		kgo.SeedBrokers(strings.Split(bootstrap, ",")...),
		kgo.ProducerLinger(5 * time.Millisecond),
		kgo.ProducerBatchMaxBytes(64 << 10),
		kgo.DefaultProduceTopic(topic),
	}
	if acksAll {
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	} else {
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	}
	switch compression {
	case "none":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.NoCompression()))
	case "lz4":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.Lz4Compression()))
	case "zstd":
		opts = append(opts, kgo.ProducerBatchCompression(kgo.ZstdCompression()))
	default:
		fail("compression %s", compression)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		fail("%v", err)
	}
	defer cl.Close()
	ctx := context.Background()
	// A connection before the clock starts; kgo loads a topic's metadata on its first record.
	if err := cl.Ping(ctx); err != nil {
		fail("%v", err)
	}
	p := newPool(size)
	var acked, digest, failed atomic.Uint64
	var mu sync.Mutex
	var lat []uint64
	if rate > 0 {
		lat = make([]uint64, 0, count)
	}
	ph := startPhase()
	start := time.Now()
	for i := uint64(0); i < count; i++ {
		if rate > 0 {
			due := dueNs(i, rate)
			if now := uint64(time.Since(start).Nanoseconds()); due > now {
				time.Sleep(time.Duration(due - now))
			}
		}
		i := i
		// The record holds a slice of the pool: kgo does not copy or modify it.
		cl.Produce(ctx, &kgo.Record{Value: p.value(i)}, func(_ *kgo.Record, err error) {
			if err != nil {
				fmt.Fprintf(os.Stderr, "FAIL: delivery: %v\n", err)
				failed.Add(1)
				return
			}
			if rate > 0 {
				ns := uint64(time.Since(start).Nanoseconds())
				if d := dueNs(i, rate); ns > d {
					ns -= d
				} else {
					ns = 0
				}
				mu.Lock()
				lat = append(lat, ns/1000)
				mu.Unlock()
			}
			acked.Add(1)
			digest.Add(p.hashOf(i))
		})
	}
	if err := cl.Flush(ctx); err != nil {
		fail("%v", err)
	}
	if acked.Load() != count || failed.Load() > 0 {
		fail("%d of %d records acknowledged, %d failed", acked.Load(), count, failed.Load())
	}
	extra := ""
	if rate > 0 {
		extra = percentiles(lat)
	}
	ph.report("produce", acked.Load(), acked.Load()*uint64(size), digest.Load(), extra)
}

func consume(bootstrap, topic string, count uint64, size int, partitions int32) {
	offsets := map[int32]kgo.Offset{}
	for p := int32(0); p < partitions; p++ {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	// Java's fetch defaults, spelled out.
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(strings.Split(bootstrap, ",")...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchMaxBytes(50<<20),
		kgo.FetchMaxPartitionBytes(1<<20),
		kgo.FetchMaxWait(500*time.Millisecond),
	)
	if err != nil {
		fail("%v", err)
	}
	defer cl.Close()
	ph := startPhase()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Second)
	defer cancel()
	var n, bytes, digest uint64
	for n < count {
		fs := cl.PollRecords(ctx, 10000)
		if ctx.Err() != nil {
			fail("only %d of %d records in 300 s", n, count)
		}
		fs.EachError(func(t string, p int32, err error) { fail("fetch %s/%d: %v", t, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if n == count {
				return
			}
			n++
			bytes += uint64(len(r.Value))
			digest += hash(r.Value)
		})
	}
	ph.report("consume", n, bytes, digest, "")
}
