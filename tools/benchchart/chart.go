package main

import (
	"fmt"
	"image/color"
	"os"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// panel is one chart of the figure: a metric against services.
type panel struct {
	title, ylabel string
	value         func(result) (float64, bool)
}

var panels = []panel{
	{"CPU seconds", "s", func(r result) (float64, bool) { return r.CPUSeconds, r.PeakRSSBytes > 0 }},
	{"Peak RSS", "MB", func(r result) (float64, bool) { return float64(r.PeakRSSBytes) / (1 << 20), r.PeakRSSBytes > 0 }},
	{"Cold convergence p99", "s", func(r result) (float64, bool) {
		return r.Report.Cold.P99Ms / 1000, r.Report.Cold.Converged == r.Report.Cold.Total
	}},
	{"Update convergence p99", "ms", func(r result) (float64, bool) {
		u := r.Report.Update
		if u == nil || u.Converged < u.Total {
			return 0, false
		}
		return u.P99Ms, true
	}},
}

// seriesKey is one line: a server at one gateway count.
type seriesKey struct {
	server   string
	gateways int
}

// writeChart draws cost against services, one line per server and
// gateway count, as a 2x2 PNG.
func writeChart(path string, results []result) error {
	var keys []seriesKey
	for _, r := range results {
		k := seriesKey{r.Server, r.Case.Gateways}
		if r.Report != nil && !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b seriesKey) int {
		if a.server != b.server {
			return compareStr(a.server, b.server)
		}
		return a.gateways - b.gateways
	})
	plots := make([][]*plot.Plot, 2)
	for i, pn := range panels {
		p := plot.New()
		p.Title.Text = pn.title
		p.X.Label.Text = "services"
		p.Y.Label.Text = pn.ylabel
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
		p.Legend.Top = true
		p.Legend.Left = true
		p.Add(plotter.NewGrid())
		for ki, k := range keys {
			var xys plotter.XYs
			for _, r := range results {
				if r.Server != k.server || r.Case.Gateways != k.gateways || r.Report == nil {
					continue
				}
				if v, ok := pn.value(r); ok {
					xys = append(xys, plotter.XY{X: float64(r.Case.Services), Y: v})
				}
			}
			if len(xys) == 0 {
				continue
			}
			slices.SortFunc(xys, func(a, b plotter.XY) int { return int(a.X - b.X) })
			line, points, err := plotter.NewLinePoints(xys)
			if err != nil {
				return err
			}
			c := seriesColor(ki)
			line.Color, points.Color = c, c
			if isFloor(k.server) {
				line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			}
			p.Add(line, points)
			p.Legend.Add(fmt.Sprintf("%s, %d gateways", k.server, k.gateways), line, points)
		}
		plots[i/2] = append(plots[i/2], p)
	}
	img := vgimg.New(vg.Points(900), vg.Points(700))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 2, Cols: 2, PadX: vg.Points(12), PadY: vg.Points(12), PadTop: vg.Points(6), PadBottom: vg.Points(6), PadLeft: vg.Points(6), PadRight: vg.Points(6)}
	canvases := plot.Align(plots, tiles, dc)
	for r := range plots {
		for c := range plots[r] {
			plots[r][c].Draw(canvases[r][c])
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func compareStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// isFloor reports whether server is the floor (dashed), as tools/bench
// names it: "floor" or "floor-delta".
func isFloor(server string) bool { return strings.HasPrefix(server, "floor") }

func seriesColor(i int) color.Color {
	palette := []color.Color{
		color.RGBA{0x1f, 0x77, 0xb4, 0xff}, color.RGBA{0xd6, 0x27, 0x28, 0xff},
		color.RGBA{0x2c, 0xa0, 0x2c, 0xff}, color.RGBA{0xff, 0x7f, 0x0e, 0xff},
		color.RGBA{0x94, 0x67, 0xbd, 0xff}, color.RGBA{0x8c, 0x56, 0x4b, 0xff},
	}
	return palette[i%len(palette)]
}
