// 95 % intervals as error bars on Chart.js charts (no CDN: the CSP allows our own static files only).
// A dataset's `intervals` holds [low, high] per point, or null. Used by perf.js and browser.js.
// On a phone a 2:1 chart is ~170 px tall, most of it legend: draw charts square there (issue 17).
if (window.Chart && window.innerWidth < 600) Chart.defaults.aspectRatio = 1;
window.intervalBars = {
  id: "intervalBars",
  afterDatasetsDraw(chart) {
    const { ctx, scales, chartArea } = chart;
    chart.data.datasets.forEach((dataset, i) => {
      if (!dataset.intervals || chart.getDatasetMeta(i).hidden) return;
      chart.getDatasetMeta(i).data.forEach((point, j) => {
        const bounds = dataset.intervals[j];
        if (!bounds || dataset.data[j] == null) return;
        const rawTop = scales.y.getPixelForValue(bounds[1]);
        const rawBottom = scales.y.getPixelForValue(bounds[0]);
        // An interval wider than the axis is cut at the plot's edge and ends in an arrow there (its
        // values are in the tooltip): one wide interval must not flatten every other bar.
        const top = Math.max(chartArea.top, Math.min(rawTop, chartArea.bottom));
        const bottom = Math.min(chartArea.bottom, Math.max(rawBottom, chartArea.top));
        const clippedTop = rawTop < chartArea.top - 1, clippedBottom = rawBottom > chartArea.bottom + 1;
        if (clippedTop || clippedBottom) {  // recorded for the layout tests (tests/e2e/test_layout.py)
          (window.tlsauditClippedErrorBars = window.tlsauditClippedErrorBars || []).push(
            { bar: `${chart.canvas.id}: ${dataset.label} #${j} [${bounds}]`, top, bottom,
              area: [chartArea.top, chartArea.bottom], arrows: [clippedTop, clippedBottom] });
        }
        ctx.save();
        ctx.strokeStyle = "#101828";
        ctx.lineWidth = 1.2;
        ctx.beginPath();
        ctx.moveTo(point.x, top); ctx.lineTo(point.x, bottom);
        end(ctx, point.x, top, clippedTop ? -1 : 0);
        end(ctx, point.x, bottom, clippedBottom ? 1 : 0);
        ctx.stroke();
        ctx.restore();
      });
    });
  },
};

// A cap (direction 0) or an arrow pointing past the edge (-1 up, 1 down).
function end(ctx, x, y, direction) {
  if (!direction) { ctx.moveTo(x - 5, y); ctx.lineTo(x + 5, y); return; }
  ctx.moveTo(x - 4, y - 5 * direction); ctx.lineTo(x, y); ctx.lineTo(x + 4, y - 5 * direction);
}

// The value axis: linear from the points (and 0), stretched to the intervals only as far as half the
// points' span; a log axis when every point is positive and they span two decades or more (requests/s
// from c=1 to c=100, a loopback HTTP median of 0.05 ms beside an HTTPS one of 20 ms).
window.intervalRange = function intervalRange(spec) {
  const points = spec.datasets.flatMap((d) => (d.data || []).filter((v) => typeof v === "number"));
  if (!points.length) return {};
  if (!spec.stacked && Math.min(...points) > 0 && Math.max(...points) / Math.min(...points) >= 100) {
    return { type: "logarithmic", beginAtZero: false };
  }
  const low = Math.min(0, ...points), high = Math.max(0, ...points);
  const span = high - low || Math.abs(high) || 1;
  const ends = spec.datasets.flatMap((d) => (d.intervals || []).filter(Boolean).flat());
  return { suggestedMin: Math.max(Math.min(low, ...ends), low - span / 2),
           suggestedMax: Math.min(Math.max(high, ...ends), high + span / 2), grace: "5%" };
};

window.intervalLabel = function intervalLabel(item) {
  const bounds = item.dataset.intervals && item.dataset.intervals[item.dataIndex];
  return bounds ? `95 % interval ${bounds[0]} … ${bounds[1]}` : "";
};
