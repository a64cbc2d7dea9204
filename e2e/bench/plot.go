package main

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// plotLatency draws each series' p50 and p99 commit-to-ack latency against
// the offered rate, both axes logarithmic: the median of the runs, with a
// bar over their range. It writes a PNG to path.
func plotLatency(path string, series []latencySeries) error {
	p := plot.New()
	p.Title.Text = "Commit-to-ack latency, one event per transaction (median of the runs; bars: min to max)"
	p.X.Label.Text = "offered rate, events/s"
	p.Y.Label.Text = "latency, ms"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	var ticks plot.ConstantTicks
	for _, pt := range series[0].points {
		ticks = append(ticks, plot.Tick{Value: float64(pt.rate), Label: strconv.Itoa(pt.rate)})
	}
	p.X.Tick.Marker = ticks
	p.Add(plotter.NewGrid())
	p.Legend.Top, p.Legend.Left = true, true

	percentiles := []struct {
		name string
		of   func(latencyPoint) []time.Duration
	}{{"p50", latencyPoint.p50s}, {"p99", latencyPoint.p99s}}
	style := 0
	for si, s := range series {
		for pi, pc := range percentiles {
			pts := medianAndRange(s.points, pc.of)
			if len(pts.XYs) == 0 {
				continue
			}
			line, marks, err := plotter.NewLinePoints(pts)
			if err != nil {
				return fmt.Errorf("plot %s %s: %w", s.name, pc.name, err)
			}
			bars, err := plotter.NewYErrorBars(pts)
			if err != nil {
				return fmt.Errorf("plot %s %s: %w", s.name, pc.name, err)
			}
			color := plotutil.Color(si) // a colour per series, a dash pattern per percentile
			line.Color, line.Dashes = color, plotutil.Dashes(pi)
			marks.Color, marks.Shape = color, plotutil.Shape(style)
			bars.Color = color
			p.Add(line, marks, bars)
			p.Legend.Add(s.name+" "+pc.name, line, marks)
			style++
		}
	}
	if style == 0 {
		return fmt.Errorf("plot %s: no latency to plot", path)
	}
	p.Y.Max *= 20 // room for the legend above the highest line
	if err := p.Save(10*vg.Inch, 6*vg.Inch, path); err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	return nil
}

// medianAndRange is, per point, the median of of(point) in milliseconds
// with the distance down to the smallest and up to the largest. Points
// without a positive latency (nothing delivered) are left out: the axis is
// logarithmic.
func medianAndRange(points []latencyPoint, of func(latencyPoint) []time.Duration) errorPoints {
	var e errorPoints
	for _, pt := range points {
		ds := slices.Clone(of(pt))
		slices.Sort(ds)
		if len(ds) == 0 || ds[0] <= 0 {
			continue
		}
		msOf := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		med := median(ds, msOf)
		e.XYs = append(e.XYs, plotter.XY{X: float64(pt.rate), Y: med})
		e.YErrors = append(e.YErrors, struct{ Low, High float64 }{med - msOf(ds[0]), msOf(ds[len(ds)-1]) - med})
	}
	return e
}

// errorPoints are points with vertical error bars.
type errorPoints struct {
	plotter.XYs
	plotter.YErrors
}
