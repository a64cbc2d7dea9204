package main

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"os"
	"time"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// plotLatency draws p50 and p99 commit-to-ack latency (log scale) against
// the offered rate for each series.
func plotLatency(path string, series []latencySeries) error {
	const w, h, left, right, top, bottom = 900, 560, 90, 230, 50, 70
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	black := color.RGBA{0, 0, 0, 255}
	grey := color.RGBA{220, 220, 220, 255}
	text := func(x, y int, s string, c color.Color) {
		d := font.Drawer{Dst: img, Src: image.NewUniform(c), Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
		d.DrawString(s)
	}

	// Axes: x is the rate index (the rates are spread evenly), y is log10(ms).
	var rates []int
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range series {
		for i, p := range s.points {
			if len(rates) <= i {
				rates = append(rates, p.rate)
			}
			for _, d := range []time.Duration{p.p50, p.p99} {
				if d > 0 {
					v := math.Log10(float64(d.Microseconds()) / 1000)
					lo, hi = math.Min(lo, v), math.Max(hi, v)
				}
			}
		}
	}
	if len(rates) == 0 || math.IsInf(lo, 0) {
		return fmt.Errorf("nothing to plot")
	}
	lo, hi = math.Floor(lo), math.Ceil(hi)
	if hi == lo {
		hi++
	}
	pw, ph := w-left-right, h-top-bottom
	xOf := func(i int) int {
		if len(rates) == 1 {
			return left + pw/2
		}
		return left + i*pw/(len(rates)-1)
	}
	yOf := func(d time.Duration) int {
		v := math.Log10(math.Max(float64(d.Microseconds())/1000, math.Pow(10, lo)))
		return top + ph - int((v-lo)/(hi-lo)*float64(ph))
	}
	for e := lo; e <= hi; e++ {
		y := top + ph - int((e-lo)/(hi-lo)*float64(ph))
		line(img, left, y, left+pw, y, grey)
		text(10, y+4, fmt.Sprintf("%g ms", math.Pow(10, e)), black)
	}
	line(img, left, top, left, top+ph, black)
	line(img, left, top+ph, left+pw, top+ph, black)
	for i, r := range rates {
		x := xOf(i)
		line(img, x, top+ph, x, top+ph+5, black)
		text(x-20, top+ph+20, fmt.Sprintf("%d/s", r), black)
	}
	text(left+pw/2-90, h-20, "offered rate (events/s, one per transaction)", black)
	text(left, 25, "commit-to-ack latency, log scale", black)

	colors := []color.RGBA{{31, 119, 180, 255}, {214, 39, 40, 255}, {44, 160, 44, 255}, {148, 103, 189, 255}}
	legendY := top + 10
	for si, s := range series {
		c := colors[si%len(colors)]
		for _, pct := range []string{"p50", "p99"} {
			var prev image.Point
			for i, p := range s.points {
				d := p.p50
				if pct == "p99" {
					d = p.p99
				}
				pt := image.Point{xOf(i), yOf(d)}
				marker(img, pt, c, pct == "p99")
				if i > 0 {
					line(img, prev.X, prev.Y, pt.X, pt.Y, c)
				}
				prev = pt
			}
			marker(img, image.Point{w - right + 20, legendY - 4}, c, pct == "p99")
			text(w-right+32, legendY, s.name+" "+pct, black)
			legendY += 20
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := png.Encode(f, img); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func line(img *image.RGBA, x0, y0, x1, y1 int, c color.Color) {
	dx, dy := math.Abs(float64(x1-x0)), math.Abs(float64(y1-y0))
	n := int(math.Max(dx, dy))
	for i := 0; i <= n; i++ {
		t := 0.0
		if n > 0 {
			t = float64(i) / float64(n)
		}
		x := x0 + int(math.Round(t*float64(x1-x0)))
		y := y0 + int(math.Round(t*float64(y1-y0)))
		img.Set(x, y, c)
		img.Set(x, y+1, c)
	}
}

func marker(img *image.RGBA, p image.Point, c color.Color, filled bool) {
	for dx := -4; dx <= 4; dx++ {
		for dy := -4; dy <= 4; dy++ {
			if filled || dx == -4 || dx == 4 || dy == -4 || dy == 4 {
				img.Set(p.X+dx, p.Y+dy, c)
			}
		}
	}
}
