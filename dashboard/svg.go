package dashboard

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strings"
	"time"
)

// The charts are SVG drawn here from numbers only (no caller text enters
// them), styled by the page's CSS classes.
const (
	chartW, chartH = 520, 180
	padL, padR     = 44, 10
	padT, padB     = 14, 34
)

// histogramSVG draws the handoff histogram: one bar per bucket.
func histogramSVG(bs []Bucket) template.HTML {
	var b strings.Builder
	openSVG(&b, "handoff latency histogram", "chart-handoff")
	var top uint64
	for _, bk := range bs {
		top = max(top, bk.Count)
	}
	plotW, plotH := float64(chartW-padL-padR), float64(chartH-padT-padB)
	axes(&b, fmt.Sprint(top), plotW, plotH)
	if len(bs) == 0 || top == 0 {
		text(&b, padL+plotW/2, padT+plotH/2, "middle", "no handoffs yet")
		return closeSVG(&b)
	}
	slot := plotW / float64(len(bs))
	for i, bk := range bs {
		x := float64(padL) + float64(i)*slot
		h := plotH * float64(bk.Count) / float64(top)
		fmt.Fprintf(&b, `<rect class="bar" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>≤ %s: %d</title></rect>`,
			x+1, float64(padT)+plotH-h, math.Max(slot-2, 1), h, html.EscapeString(seconds(bk.UpperS)), bk.Count)
		if bk.Count > 0 {
			text(&b, x+slot/2, float64(padT)+plotH-h-3, "middle", fmt.Sprint(bk.Count))
		}
		if i%3 == 0 || i == len(bs)-1 {
			text(&b, x+slot/2, float64(chartH-padB+14), "middle", seconds(bk.UpperS))
		}
	}
	text(&b, padL+plotW/2, chartH-4, "middle", "free → next grant (bucket upper bound)")
	return closeSVG(&b)
}

// ratesSVG draws acquires and renewals per second over the samples.
func ratesSVG(rs []Rate) template.HTML {
	var b strings.Builder
	openSVG(&b, "acquire and renew rates", "chart-rates")
	top := 0.0
	for _, r := range rs {
		top = math.Max(top, math.Max(r.Acquires, r.Renewals))
	}
	top = niceCeil(top)
	plotW, plotH := float64(chartW-padL-padR), float64(chartH-padT-padB)
	axes(&b, fmt.Sprintf("%g/s", top), plotW, plotH)
	if len(rs) < 2 {
		text(&b, padL+plotW/2, padT+plotH/2, "middle", "collecting samples…")
		return closeSVG(&b)
	}
	span := rs[len(rs)-1].At.Sub(rs[0].At).Seconds()
	line := func(class string, v func(Rate) float64) {
		pts := make([]string, 0, len(rs))
		for _, r := range rs {
			x := float64(padL) + plotW*r.At.Sub(rs[0].At).Seconds()/math.Max(span, 1e-9)
			y := float64(padT) + plotH*(1-v(r)/top)
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
		}
		fmt.Fprintf(&b, `<polyline class="%s" points="%s"/>`, class, strings.Join(pts, " "))
	}
	line("line-acquire", func(r Rate) float64 { return r.Acquires })
	line("line-renew", func(r Rate) float64 { return r.Renewals })
	text(&b, float64(padL), chartH-4, "start", "−"+(time.Duration(span)*time.Second).String())
	text(&b, padL+plotW, chartH-4, "end", "now")
	fmt.Fprintf(&b, `<rect class="key-acquire" x="%d" y="4" width="10" height="4"/>`, padL+8)
	text(&b, padL+22, 10, "start", "acquires/s")
	fmt.Fprintf(&b, `<rect class="key-renew" x="%d" y="4" width="10" height="4"/>`, padL+100)
	text(&b, padL+114, 10, "start", "renewals/s")
	return closeSVG(&b)
}

func openSVG(b *strings.Builder, title, class string) {
	fmt.Fprintf(b, `<svg class="chart %s" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" role="img" aria-label="%s"><title>%s</title>`,
		class, chartW, chartH, html.EscapeString(title), html.EscapeString(title))
}

func closeSVG(b *strings.Builder) template.HTML {
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // built from numbers and constants only
}

func axes(b *strings.Builder, topLabel string, plotW, plotH float64) {
	fmt.Fprintf(b, `<line class="axis" x1="%d" y1="%d" x2="%d" y2="%.1f"/>`, padL, padT, padL, float64(padT)+plotH)
	fmt.Fprintf(b, `<line class="axis" x1="%d" y1="%.1f" x2="%.1f" y2="%.1f"/>`, padL, float64(padT)+plotH, float64(padL)+plotW, float64(padT)+plotH)
	text(b, padL-4, padT+4, "end", topLabel)
	text(b, padL-4, float64(padT)+plotH, "end", "0")
}

func text(b *strings.Builder, x, y float64, anchor, s string) {
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="%s">%s</text>`, x, y, anchor, html.EscapeString(s))
}

// seconds prints a bucket bound: 1ms, 256ms, 4s, +Inf.
func seconds(s float64) string {
	switch {
	case math.IsInf(s, 1):
		return "+Inf"
	case s < 1:
		return fmt.Sprintf("%gms", math.Round(s*1e4)/10)
	}
	return fmt.Sprintf("%gs", math.Round(s*10)/10)
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten (at least 1).
func niceCeil(v float64) float64 {
	if v <= 1 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}
