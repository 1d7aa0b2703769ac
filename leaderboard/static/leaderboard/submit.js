/* Submit page: show only the chosen benchmark's file inputs and model notes, and upload with a progress bar.
   Without JavaScript every input is shown, labelled by benchmark, and the form posts normally. */
(function () {
  "use strict";
  var form = document.getElementById("submit-form");
  if (!form) { return; }
  var select = form.querySelector("select[name=benchmark]");
  var groups = Array.prototype.slice.call(form.querySelectorAll(".file-group"));
  // each benchmark's model-input notes (they hold no inputs): only the chosen one's shows
  var notes = Array.prototype.slice.call(form.querySelectorAll(".checkpoint-help"));
  var errorBox = document.getElementById("form-errors");
  var progress = document.getElementById("upload-progress");
  var bar = document.getElementById("upload-progress-bar");
  var progressText = document.getElementById("upload-progress-text");
  var button = document.getElementById("submit-button");
  var maxBytes = parseInt(form.getAttribute("data-max-bytes"), 10);
  var maxLabel = form.getAttribute("data-max-label");

  var hint = document.createElement("p");
  hint.className = "help choose-hint";
  hint.textContent = "Choose a benchmark above to see its prediction files.";
  if (groups.length) { groups[0].parentNode.insertBefore(hint, groups[0]); }

  function showChosen() {
    var chosen = select ? select.value : "";
    groups.forEach(function (group) {
      var on = group.getAttribute("data-benchmark") === chosen;
      group.hidden = !on;
      // disabled inputs are left out of the upload
      Array.prototype.forEach.call(group.querySelectorAll("input"), function (input) {
        input.disabled = !on;
      });
    });
    notes.forEach(function (note) {
      note.hidden = note.getAttribute("data-benchmark") !== chosen;
    });
    hint.hidden = Boolean(chosen);
  }
  if (select) {
    select.addEventListener("change", showChosen);
    showChosen();
  }

  function clearErrors() {
    errorBox.hidden = true;
    errorBox.textContent = "";
    Array.prototype.forEach.call(form.querySelectorAll(".field.has-error"), function (field) {
      field.classList.remove("has-error");
      var list = field.querySelector(".field-errors");
      if (list) { list.textContent = ""; }
    });
    Array.prototype.forEach.call(form.querySelectorAll("[aria-invalid]"), function (input) {
      input.removeAttribute("aria-invalid");
    });
  }

  function addLine(parent, text) {
    var p = document.createElement("p");
    p.className = "error";
    p.textContent = text;
    parent.appendChild(p);
  }

  function showErrors(errors) {
    var general = [];
    var first = null;
    errors.forEach(function (error) {
      var field = error.field ? form.querySelector('.field[data-field="' + error.field + '"]') : null;
      if (!field) { general.push(error.message); return; }
      field.classList.add("has-error");
      addLine(field.querySelector(".field-errors"), error.message);
      var input = field.querySelector("input, select, textarea");
      if (input) { input.setAttribute("aria-invalid", "true"); }
      first = first || input;
    });
    if (!general.length) { general.push("Please correct the highlighted field below."); }
    general.forEach(function (message) { addLine(errorBox, message); });
    errorBox.hidden = false;
    errorBox.scrollIntoView({block: "center"});
    if (first) { first.focus({preventScroll: true}); }
  }

  function megabytes(bytes) { return (bytes / 1048576).toFixed(1) + " MB"; }

  function done() {
    button.disabled = false;
    progress.hidden = true;
    form.classList.remove("uploading");
  }

  form.addEventListener("submit", function (event) {
    if (!window.FormData || !window.XMLHttpRequest) { return; }  // the plain POST works too
    event.preventDefault();
    clearErrors();
    // the server's cap, checked here first so that nothing too large is sent at all
    var tooBig = [];
    var total = 0;
    Array.prototype.forEach.call(form.querySelectorAll("input[type=file]"), function (input) {
      if (input.disabled || !input.files) { return; }
      Array.prototype.forEach.call(input.files, function (file) {
        total += file.size;
        if (file.size > maxBytes) {
          tooBig.push({field: input.name, message: file.name + " is " + megabytes(file.size) +
                       ", larger than the limit of " + maxLabel + ": it was not uploaded"});
        }
      });
    });
    if (!tooBig.length && total > maxBytes + 1048576) {
      tooBig.push({field: null, message: "Together the files are " + megabytes(total) +
                   ", more than one upload may carry (" + maxLabel + "): nothing was uploaded"});
    }
    if (tooBig.length) { showErrors(tooBig); return; }

    var xhr = new XMLHttpRequest();
    xhr.open("POST", form.action);
    xhr.setRequestHeader("Accept", "application/json");
    xhr.setRequestHeader("X-CSRFToken", form.querySelector("[name=csrfmiddlewaretoken]").value);
    xhr.upload.onprogress = function (event) {
      if (!event.lengthComputable) { return; }
      var percent = Math.floor(100 * event.loaded / event.total);
      bar.value = percent;
      progressText.textContent = "Uploading… " + percent + "% (" + megabytes(event.loaded) +
        " of " + megabytes(event.total) + ")";
    };
    xhr.upload.onload = function () {
      bar.value = 100;
      progressText.textContent = "Uploaded; checking the files…";
    };
    xhr.onload = function () {
      var body = null;
      try { body = JSON.parse(xhr.responseText); } catch (ignored) { body = null; }
      if (xhr.status === 201 && body && body.url) {
        progressText.textContent = "Received: opening the submission's status page…";
        window.location.assign(body.url);
        return;
      }
      done();
      if (body && body.errors) {
        showErrors(body.errors);
      } else if (xhr.responseURL && xhr.responseURL.indexOf("/login/") !== -1) {
        showErrors([{field: null, message: "You are logged out: log in again, then submit."}]);
      } else {
        showErrors([{field: null, message: "The server answered " + xhr.status +
                     " and stored nothing. Try again in a moment."}]);
      }
    };
    xhr.onerror = function () {
      done();
      showErrors([{field: null, message: "The upload was interrupted (network error). " +
                   "Nothing was stored: try again."}]);
    };
    bar.value = 0;
    progressText.textContent = "Uploading…";
    progress.hidden = false;
    button.disabled = true;
    form.classList.add("uploading");
    xhr.send(new FormData(form));
  });
})();
