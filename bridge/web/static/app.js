// Progressive enhancement: answer without a page reload. Without JavaScript the forms
// post and redirect back, so every button works either way.
"use strict";
(function () {
  var form = document.querySelector('form[data-js="answer"]');
  if (!form) return;
  var out = form.parentNode.querySelector('[data-testid="rec-answer"]');
  form.addEventListener("submit", function (ev) {
    var button = ev.submitter;
    if (!button || !window.fetch) return;
    ev.preventDefault();
    var buttons = form.querySelectorAll("button");
    buttons.forEach(function (b) { b.disabled = true; });
    fetch("/api/feedback", {
      method: "POST",
      credentials: "same-origin",
      headers: {
        "Content-Type": "application/json",
        "X-CSRF-Token": form.elements.csrf_token.value
      },
      body: JSON.stringify({
        recommendation_id: parseInt(form.elements.recommendation_id.value, 10),
        response: button.value,
        channel: "web"
      })
    }).then(function (r) {
      return r.json().then(function (body) { return { ok: r.ok, body: body }; });
    }).then(function (res) {
      if (!res.ok) throw new Error(res.body.error || "failed");
      out.textContent = "Answered: " + res.body.response + " via " + res.body.channel +
        (res.body.created ? "" : " (it was already answered)");
      out.hidden = false;
      form.hidden = true;
      out.setAttribute("tabindex", "-1");
      out.focus();
    }).catch(function (err) {
      out.textContent = "Could not record the answer: " + err.message + ". Try again.";
      out.hidden = false;
      buttons.forEach(function (b) { b.disabled = false; });
    });
  });
  // a / i / r answer from the keyboard when focus is not in a form field.
  document.addEventListener("keydown", function (ev) {
    if (form.hidden || ev.altKey || ev.ctrlKey || ev.metaKey) return;
    var tag = (document.activeElement && document.activeElement.tagName) || "";
    if (tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA") return;
    var value = { a: "accepted", i: "ignored", r: "rescheduled" }[ev.key];
    if (!value) return;
    var b = form.querySelector('button[value="' + value + '"]');
    if (b) { ev.preventDefault(); form.requestSubmit(b); }
  });
})();
