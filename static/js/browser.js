// Browser probe charts: specs from json_script#browser-charts (tlsaudit/probes/presenters.py).
// "bar" + stacked: the page-load phases per variant; "waterfall": one floating horizontal bar
// per request of a load, from its start to its end (ms since navigation start).
const PHASE_COLORS = ["#98a2b3", "#6941c6", "#1f5fbf", "#b42318", "#b7791f", "#0e7a3e", "#475467", "#d0d5dd"];

function phasesChart(canvas, spec) {
  return new Chart(canvas, {
    type: "bar",
    data: {
      labels: spec.labels,
      datasets: spec.datasets.map((d, i) => ({
        label: d.label, data: d.data, backgroundColor: PHASE_COLORS[i % PHASE_COLORS.length],
      })),
    },
    options: {
      animation: false,
      scales: {
        x: { stacked: true, title: { display: true, text: spec.x_title } },
        y: { stacked: true, beginAtZero: true, title: { display: true, text: spec.y_title } },
      },
      plugins: { tooltip: { callbacks: { label: (item) => `${item.dataset.label}: ${item.raw ?? "–"} ms` } } },
    },
  });
}

// Signed changes (HTTPS against HTTP) with their 95 % intervals: bars up or down from zero.
function changeChart(canvas, spec) {
  return new Chart(canvas, {
    type: "bar",
    data: {
      labels: spec.labels,
      datasets: spec.datasets.map((d, i) => ({
        label: d.label, data: d.data, intervals: d.intervals, backgroundColor: PHASE_COLORS[(i + 2) % PHASE_COLORS.length],
      })),
    },
    options: {
      animation: false,
      scales: {
        x: { title: { display: true, text: spec.x_title } },
        y: { beginAtZero: true, ...window.intervalRange(spec), title: { display: true, text: spec.y_title } },
      },
      plugins: { tooltip: { callbacks: { afterLabel: window.intervalLabel } } },
    },
    plugins: [window.intervalBars],
  });
}

function waterfallChart(canvas, spec) {
  const rows = spec.datasets[0].data;
  // The box's height grows with the rows; set here because the CSP forbids style="" in the page.
  const box = canvas.closest(".chart-box");
  if (box && box.dataset.height) box.style.height = `${Number(box.dataset.height)}px`;
  return new Chart(canvas, {
    type: "bar",
    data: {
      labels: spec.labels,
      datasets: [{ label: spec.datasets[0].label, data: rows, backgroundColor: "#1f5fbfcc", barPercentage: 0.8 }],
    },
    options: {
      animation: false,
      indexAxis: "y",
      maintainAspectRatio: false,
      scales: {
        x: { beginAtZero: true, title: { display: true, text: spec.x_title } },
        y: { ticks: { autoSkip: false, font: { size: 11 } } },
      },
      plugins: {
        legend: { display: false },
        tooltip: { callbacks: { label: (item) => {
          const [start, end] = item.raw;
          return `${start} → ${end} ms (${(end - start).toFixed(1)} ms)`;
        } } },
      },
    },
  });
}

function drawBrowserCharts() {
  const source = document.getElementById("browser-charts");
  if (!source || !window.Chart) return;
  JSON.parse(source.textContent).forEach((spec) => {
    const canvas = document.getElementById(`chart-${spec.id}`);
    if (!canvas || canvas.dataset.drawn) return;
    canvas.dataset.drawn = "1";
    if (spec.type === "waterfall") waterfallChart(canvas, spec);
    else if (spec.datasets.some((d) => d.intervals)) changeChart(canvas, spec);
    else phasesChart(canvas, spec);
  });
}
document.addEventListener("DOMContentLoaded", drawBrowserCharts);
document.addEventListener("htmx:afterSwap", drawBrowserCharts);
