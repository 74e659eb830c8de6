/* Draws the channel-health charts from the JSON the page embeds (no network calls). */
(function () {
  "use strict";
  var dataNode = document.getElementById("channel-health-data");
  if (!dataNode || typeof Chart === "undefined") return;
  var data = JSON.parse(dataNode.textContent);
  var script = document.getElementById("health-script");
  var warn = parseFloat(script.dataset.warn);
  var critical = parseFloat(script.dataset.critical);
  var palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];

  function line(value, label, color) {
    return { label: label, data: data.labels.map(function () { return value; }), borderColor: color,
             borderDash: [6, 4], pointRadius: 0, borderWidth: 1, fill: false };
  }

  var ratioSets = data.series.map(function (s, i) {
    return { label: s.label, data: s.ratio, borderColor: palette[i % palette.length], spanGaps: true, tension: 0.2 };
  });
  ratioSets.push(line(warn, "Warning (" + warn + ")", "#e0a800"));
  ratioSets.push(line(critical, "Critical (" + critical + ")", "#c0392b"));
  window.lindyRatioChart = new Chart(document.getElementById("ratio-chart"), {
    type: "line",
    data: { labels: data.labels, datasets: ratioSets },
    options: { animation: false, maintainAspectRatio: false, scales: { y: { beginAtZero: true, title: { display: true, text: "sent per received" } } } }
  });

  var sum = function (key) {
    return data.labels.map(function (_, day) {
      return data.series.reduce(function (total, s) { return total + (s[key][day] || 0); }, 0);
    });
  };
  window.lindyVolumeChart = new Chart(document.getElementById("volume-chart"), {
    type: "bar",
    data: { labels: data.labels, datasets: [
      { label: "Sent", data: sum("sent"), backgroundColor: "#1f77b4" },
      { label: "Received", data: sum("received"), backgroundColor: "#2ca02c" },
      { label: "Fallbacks to SMS", data: sum("fallbacks"), backgroundColor: "#ff7f0e" }
    ] },
    options: { animation: false, maintainAspectRatio: false, scales: { y: { beginAtZero: true } } }
  });
})();
