package engine

import (
	"errors"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/catalog"
)

func TestComputeParse(t *testing.T) {
	read := func(name string) []byte {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cpu := Workload{Kind: CPU, Threads: 1, Duration: 3 * time.Second}
	m, err := stressNG{}.Parse(cpu, read("stressng-cpu.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if got := m[catalog.CPUOps]; got != 1096.91 {
		t.Errorf("cpu ops/s = %v, want the real-time rate 1096.91", got)
	}
	mem := Workload{Kind: Memory, Threads: 2, Duration: 2 * time.Second}
	m, err = sysbench{}.Parse(mem, read("sysbench-memory.txt"))
	if err != nil {
		t.Fatal(err)
	}
	// 13760.85 and 12395.71 MiB/s in MB/s.
	if got := m[catalog.MemoryRead]; math.Abs(got-14429.2) > 0.1 {
		t.Errorf("read MB/s = %v, want 14429.2", got)
	}
	if got := m[catalog.MemoryWrite]; math.Abs(got-12997.8) > 0.1 {
		t.Errorf("write MB/s = %v, want 12997.8", got)
	}
	// A run cut short (only the read pass) is a tool error, never half a figure.
	_, err = sysbench{}.Parse(mem, read("sysbench-memory.txt")[:len(read("sysbench-memory.txt"))/2])
	var te *ToolError
	if !errors.As(err, &te) {
		t.Errorf("half an output: got %v, want a tool error", err)
	}
	if _, err := (stressNG{}).Parse(cpu, []byte("stress-ng: error: [1] cannot allocate\n")); !errors.As(err, &te) || !strings.Contains(err.Error(), "cannot allocate") {
		t.Errorf("a failed cpu run: %v", err)
	}
}

func TestComputeWorkloads(t *testing.T) {
	for _, c := range []struct {
		w   Workload
		id  string
		err string
	}{
		{Workload{Kind: CPU, Threads: 1, Duration: time.Second}, "cpu/1", ""},
		{Workload{Kind: CPU, Duration: time.Second}, "cpu/all", ""},
		{Workload{Kind: Memory, Threads: 2, MessageSize: 16 << 20, Duration: time.Second}, "memory/2x16M", ""},
		{Workload{Kind: CPU, Threads: -1, Duration: time.Second}, "", "threads: expected 0 (one per CPU) to 256, got -1"},
		{Workload{Kind: Memory, MessageSize: 100, Duration: time.Second}, "", "size: expected 0 (64M) or 1M-1024M"},
		{Workload{Kind: TCPRR, MessageSize: 1, Threads: 2, Duration: time.Second}, "", "threads: expected 0 for tcp-rr"},
	} {
		err := c.w.Validate()
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%+v: error %v, want %q", c.w, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%+v: %v", c.w, err)
		}
		if c.w.ID() != c.id {
			t.Errorf("%+v: id %s, want %s", c.w, c.w.ID(), c.id)
		}
		back, err := ParseID(c.id)
		if err != nil || back.ID() != c.id || back.Threads != c.w.Threads {
			t.Errorf("ParseID(%s) = %+v, %v", c.id, back, err)
		}
		e, err := For(c.w)
		want := map[string]string{CPU: NameStressNG, Memory: NameSysbench}[c.w.Kind]
		if err != nil || e.Name() != want || e.ServerArgv(c.w, 1) != nil {
			t.Errorf("For(%s) = %v, %v: want %s without a server", c.id, e, err, want)
		}
	}
	// Each memory pass takes half the sample; the shell counts the pod's CPUs for threads 0.
	argv := sysbench{}.ClientArgv(Workload{Kind: Memory, Duration: 4 * time.Second}, "", 0)
	if !strings.Contains(argv[2], "--threads=$(nproc) --time=2 --memory-block-size=65536K") || strings.Count(argv[2], "--time=2") != 2 {
		t.Errorf("memory argv %q", argv[2])
	}
}
