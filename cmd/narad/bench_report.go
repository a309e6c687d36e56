package main

import (
	"fmt"
	"time"

	"narad/proc"
)

// phaseFigures are the measured figures of one bench phase.
type phaseFigures struct {
	// OK counts messages that succeeded; Failed the requests that did
	// not (a produce; in the drain, a consume or an ack).
	OK     int `json:"ok"`
	Failed int `json:"failed"`
	// Seconds is the wall time of the phase.
	Seconds           float64 `json:"seconds"`
	MessagesPerSecond float64 `json:"messages_per_second"`
	// LatencyMs holds p50, p95 and p99 of the request latencies in ms.
	LatencyMs  latencyPercentiles `json:"latency_ms"`
	FirstError string             `json:"first_error,omitempty"`
	// Interrupted: the phase stopped early (Ctrl-C); the figures cover
	// the requests answered until then, none cut short counted.
	Interrupted bool `json:"interrupted,omitempty"`
	// ClientCPUMicrosPerMessage is the bench process's own CPU (user +
	// system) during the phase per message; 0 where unknown.
	ClientCPUMicrosPerMessage float64 `json:"client_cpu_us_per_message,omitempty"`
	// Server holds the figures of the node the phase ran against (its
	// /metrics before and after; bench_server.go), or ServerError why
	// there are none. Neither for the ceiling phase.
	Server      *serverFigures `json:"server,omitempty"`
	ServerError string         `json:"server_error,omitempty"`
	elapsed     time.Duration
	latency     latencyDurations
}

type latencyPercentiles struct {
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
}

type latencyDurations struct{ p50, p95, p99 time.Duration }

// benchReport is what narad bench prints.
type benchReport struct {
	Produce phaseFigures  `json:"produce"`
	Consume *phaseFigures `json:"consume,omitempty"`
	// Ceiling is the produce phase against a server that only answers
	// (--ceiling), and CeilingRatio the produce rate over its rate.
	Ceiling      *phaseFigures `json:"ceiling,omitempty"`
	CeilingRatio float64       `json:"ceiling_ratio,omitempty"`
	// Fanout holds the children's figures (--children, --delay).
	Fanout *fanoutFigures `json:"fanout,omitempty"`
}

// setCeiling adds the ceiling phase and the ratio of produce to it.
func (r *benchReport) setCeiling(ceiling phaseFigures) {
	r.Ceiling = &ceiling
	if ceiling.MessagesPerSecond > 0 {
		r.CeilingRatio = r.Produce.MessagesPerSecond / ceiling.MessagesPerSecond
	}
}

func newPhaseFigures(ok int, elapsed time.Duration, latencies []time.Duration) phaseFigures {
	latency := latencyDurations{proc.Percentile(latencies, 0.50), proc.Percentile(latencies, 0.95), proc.Percentile(latencies, 0.99)}
	figures := phaseFigures{OK: ok, Seconds: elapsed.Seconds(), elapsed: elapsed, latency: latency,
		LatencyMs: latencyPercentiles{milliseconds(latency.p50), milliseconds(latency.p95), milliseconds(latency.p99)}}
	if elapsed > 0 {
		figures.MessagesPerSecond = float64(ok) / elapsed.Seconds()
	}
	return figures
}

func milliseconds(d time.Duration) float64 {
	return float64(d) / float64(time.Millisecond)
}

// formatLatency rounds a latency for people: µs below 1 ms, else 0.01 ms.
func formatLatency(d time.Duration) string {
	if d < time.Millisecond {
		return d.Round(time.Microsecond).String()
	}
	return d.Round(10 * time.Microsecond).String()
}

// interruptedNote marks the line of a phase stopped early.
func interruptedNote(interrupted bool) string {
	if interrupted {
		return " (interrupted)"
	}
	return ""
}

func (a *app) printBenchReport(report benchReport, asJSON bool) error {
	if asJSON {
		return printJSON(a.stdout, report)
	}
	produce := report.Produce
	fmt.Fprintf(a.stdout, "produce: %d ok, %d failed in %s — %.0f msg/s; latency p50=%s p95=%s p99=%s%s\n",
		produce.OK, produce.Failed, produce.elapsed.Round(time.Millisecond), produce.MessagesPerSecond,
		formatLatency(produce.latency.p50), formatLatency(produce.latency.p95), formatLatency(produce.latency.p99),
		interruptedNote(produce.Interrupted))
	if consume := report.Consume; consume != nil {
		fmt.Fprintf(a.stdout, "consume+ack: %d ok, %d failed in %s — %.0f msg/s; latency p50=%s p99=%s\n",
			consume.OK, consume.Failed, consume.elapsed.Round(time.Millisecond), consume.MessagesPerSecond,
			formatLatency(consume.latency.p50), formatLatency(consume.latency.p99))
	}
	if report.Fanout != nil {
		a.printFanout(report.Fanout)
	}
	if ceiling := report.Ceiling; ceiling != nil {
		fmt.Fprintf(a.stdout, "ceiling: %d in %s — %.0f msg/s; latency p50=%s p99=%s; produce is %.0f%% of it\n",
			ceiling.OK, ceiling.elapsed.Round(time.Millisecond), ceiling.MessagesPerSecond,
			formatLatency(ceiling.latency.p50), formatLatency(ceiling.latency.p99), 100*report.CeilingRatio)
	}
	a.printClientCPU(report)
	a.printServer(report)
	return nil
}

// printClientCPU prints the bench process's own CPU per message of each
// phase, when the system reports it.
func (a *app) printClientCPU(report benchReport) {
	if report.Produce.ClientCPUMicrosPerMessage <= 0 {
		return
	}
	fmt.Fprintf(a.stdout, "client CPU: produce %.0f µs/msg", report.Produce.ClientCPUMicrosPerMessage)
	if consume := report.Consume; consume != nil && consume.ClientCPUMicrosPerMessage > 0 {
		fmt.Fprintf(a.stdout, ", consume+ack %.0f µs/msg", consume.ClientCPUMicrosPerMessage)
	}
	fmt.Fprintln(a.stdout)
}
