// Keyboard shortcuts of the review page: c / w / u vote, p toggles "ground truth problematic".
(function () {
  "use strict";
  var form = document.getElementById("review-form");
  if (!form) { return; }
  document.addEventListener("keydown", function (event) {
    var target = event.target;
    if (event.ctrlKey || event.metaKey || event.altKey) { return; }
    if (target && /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName) && target.type !== "checkbox") { return; }
    var control = form.querySelector('[data-key="' + event.key.toLowerCase() + '"]');
    if (!control) { return; }
    event.preventDefault();
    if (control.type === "checkbox") { control.checked = !control.checked; } else { control.click(); }
  });
}());
