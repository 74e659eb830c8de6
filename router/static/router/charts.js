// Draws every <canvas data-chart="ID"> from the JSON in <script id="ID">: {type, labels, datasets, options}.
// Each canvas sits in a <div class="chart"> whose height it fills (lindy.css), so phones get a readable chart.
(function () {
  function draw(root) {
    if (typeof Chart === "undefined") return;
    root.querySelectorAll("canvas[data-chart]").forEach(function (canvas) {
      var source = document.getElementById(canvas.dataset.chart);
      if (!source) return;
      var spec = JSON.parse(source.textContent);
      if (canvas._chart) canvas._chart.destroy();
      canvas._chart = new Chart(canvas, {
        type: spec.type || "line",
        data: {labels: spec.labels, datasets: spec.datasets},
        options: Object.assign({responsive: true, maintainAspectRatio: false, animation: false, spanGaps: true,
                                interaction: {mode: "index", intersect: false}}, spec.options || {}),
      });
      canvas.dataset.drawn = "1";
    });
  }
  document.addEventListener("DOMContentLoaded", function () { draw(document); });
  document.addEventListener("htmx:afterSwap", function (event) { draw(event.target); });
})();
