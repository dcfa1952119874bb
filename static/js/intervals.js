// 95 % intervals as error bars on Chart.js charts (no CDN: the CSP allows our own static files only).
// A dataset's `intervals` holds [low, high] per point, or null. Used by perf.js and browser.js.
// On a phone a 2:1 chart is ~170 px tall, most of it legend: draw charts square there (issue 17).
if (window.Chart && window.innerWidth < 600) Chart.defaults.aspectRatio = 1;
window.intervalBars = {
  id: "intervalBars",
  afterDatasetsDraw(chart) {
    const { ctx, scales } = chart;
    chart.data.datasets.forEach((dataset, i) => {
      if (!dataset.intervals || chart.getDatasetMeta(i).hidden) return;
      chart.getDatasetMeta(i).data.forEach((point, j) => {
        const bounds = dataset.intervals[j];
        if (!bounds || dataset.data[j] == null) return;
        const top = scales.y.getPixelForValue(bounds[1]);
        const bottom = scales.y.getPixelForValue(bounds[0]);
        // Recorded for the layout tests (tests/e2e/test_layout.py): a bar above the plot is cut off.
        if (Math.min(top, bottom) < chart.chartArea.top - 1 || Math.max(top, bottom) > chart.chartArea.bottom + 1) {
          (window.tlsauditClippedErrorBars = window.tlsauditClippedErrorBars || []).push(
            `${chart.canvas.id}: ${dataset.label} #${j} [${bounds}]`);
        }
        ctx.save();
        ctx.strokeStyle = "#101828";
        ctx.lineWidth = 1.2;
        ctx.beginPath();
        ctx.moveTo(point.x, top); ctx.lineTo(point.x, bottom);
        ctx.moveTo(point.x - 5, top); ctx.lineTo(point.x + 5, top);
        ctx.moveTo(point.x - 5, bottom); ctx.lineTo(point.x + 5, bottom);
        ctx.stroke();
        ctx.restore();
      });
    });
  },
};

// The value axis must reach the ends of the error bars, not only the points.
// Chart.js rounds the axis outwards from the suggested ends; `grace` leaves room above the highest
// bar's cap (5 px wide, drawn at the very edge it was cut in half, and off the canvas when the
// suggested end was a point, not the interval).
window.intervalRange = function intervalRange(spec) {
  const ends = spec.datasets.flatMap((d) => [...(d.intervals || []).filter(Boolean).flat(),
                                              ...(d.data || []).filter((v) => typeof v === "number")]);
  return ends.length ? { suggestedMin: Math.min(0, ...ends), suggestedMax: Math.max(0, ...ends), grace: "5%" } : {};
};

window.intervalLabel = function intervalLabel(item) {
  const bounds = item.dataset.intervals && item.dataset.intervals[item.dataIndex];
  return bounds ? `95 % interval ${bounds[0]} … ${bounds[1]}` : "";
};
