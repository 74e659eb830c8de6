// Keyboard review on a decision page: a = authorize, d = dismiss, n = next waiting decision.
// Each key presses the same button or link a mouse would (so confirmations still apply); keys
// typed into a field, or with a modifier, are left alone.
document.addEventListener("keydown", function (event) {
  if (event.altKey || event.ctrlKey || event.metaKey || event.repeat) {
    return;
  }
  var target = event.target;
  if (target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName))) {
    return;
  }
  var selector = {a: '[data-action="authorize"]', d: '[data-action="dismiss"]', n: "[data-next]"}[event.key];
  var element = selector && document.querySelector(selector);
  if (element) {
    event.preventDefault();
    element.click();
  }
});
