// Grade history: the grade over time from json_script#history-chart (tlsaudit/monitoring/history.py),
// on an axis of grade letters (M and T at the bottom, A+ at the top), the score in the tooltip,
// scheduled audits as circles and manual ones as triangles.
// On a phone a 2:1 chart is ~170 px tall, most of it legend: draw charts square there (issue 17).
if (window.Chart && window.innerWidth < 600) Chart.defaults.aspectRatio = 1;
function drawHistory() {
  const canvas = document.getElementById("history-canvas");
  const source = document.getElementById("history-chart");
  if (!canvas || !source || canvas.dataset.drawn || typeof Chart === "undefined") return;
  canvas.dataset.drawn = "1";
  const series = JSON.parse(source.textContent);
  const points = series.points, grades = series.grades;
  const gradeLabels = {
    id: "gradeLabels",
    afterDatasetsDraw(chart) {
      const { ctx } = chart;
      ctx.save();
      ctx.font = "bold 12px system-ui, sans-serif";
      ctx.textAlign = "center";
      chart.getDatasetMeta(0).data.forEach((el, i) => ctx.fillText(points[i].grade, el.x, el.y - 10));
      ctx.restore();
    },
  };
  new Chart(canvas, {
    type: "line",
    data: {
      labels: points.map((p) => p.x.slice(0, 16).replace("T", " ")),
      datasets: [{
        label: "Grade", data: points.map((p) => p.y), borderColor: "#1f5fbf", stepped: true,
        pointStyle: points.map((p) => (p.trigger === "schedule" ? "circle" : "triangle")), pointRadius: 5,
      }],
    },
    options: {
      animation: false,
      scales: { y: { min: 0, max: grades.length - 1, title: { display: true, text: "grade" },
                     ticks: { stepSize: 1, callback: (value) => grades[value] ?? "" } } },
      plugins: { tooltip: { callbacks: { label: (item) => `${points[item.dataIndex].grade} · score ${points[item.dataIndex].score} (${points[item.dataIndex].trigger})` } } },
      onClick: (_, elements) => {
        const i = elements.length ? elements[0].index : 0;
        if (i > 0) window.location.search = `?a=${points[i - 1].id}&b=${points[i].id}`;  // this audit vs the one before
      },
    },
    plugins: [gradeLabels],
  });
}
document.addEventListener("DOMContentLoaded", drawHistory);
