// The message of an in-place (htmx) action arrives with its own response, as the
// "lindy:messages" event (lindy.middleware.htmx_messages): shown here in the page's message
// area, replacing the previous action's, and never kept for the next page.
document.addEventListener("lindy:messages", function (event) {
  var area = document.getElementById("messages");
  var items = (event.detail && event.detail.messages) || [];
  if (!area || !items.length) {
    return;
  }
  area.replaceChildren();
  items.forEach(function (item) {
    var line = document.createElement("p");
    line.className = "message " + String(item.level || "info");
    line.setAttribute("role", "status");
    line.textContent = String(item.text);
    area.appendChild(line);
  });
  area.hidden = false;
  // The event comes before the swap: focus now, and again once the swap has settled (an
  // autofocus in the new content would otherwise take it back).
  area.focus();
  document.body.addEventListener("htmx:afterSettle", function () { area.focus(); }, {once: true});
});
