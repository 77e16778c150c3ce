// Copy-to-clipboard for the install commands. The pages work without it: the buttons stay hidden.
"use strict";

function copyText(text) {
  if (navigator.clipboard && window.isSecureContext) {
    return navigator.clipboard.writeText(text);
  }
  // Plain http on a non-local address is not a secure context: fall back to a selected textarea.
  return new Promise(function (resolve, reject) {
    var area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.className = "offscreen";
    document.body.appendChild(area);
    area.select();
    var ok = document.execCommand("copy");
    document.body.removeChild(area);
    if (ok) { resolve(); } else { reject(new Error("copy refused")); }
  });
}

document.addEventListener("DOMContentLoaded", function () {
  var status = document.querySelector(".copy-status");
  document.querySelectorAll("button.copy[data-copy]").forEach(function (button) {
    var source = document.getElementById(button.getAttribute("data-copy"));
    if (!source) { return; }
    button.hidden = false;
    button.addEventListener("click", function () {
      var text = source.textContent;
      copyText(text).then(function () {
        if (status) { status.textContent = "Copied: " + text; }
        button.textContent = "Copied";
      }, function () {
        if (status) { status.textContent = "Copy failed: select the command and copy it by hand."; }
      });
    });
  });
});
