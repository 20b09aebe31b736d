// The waiting-room page: joins the room, shows the place and ETA from the event stream, and on admission
// sends the visitor to the site with the admission token. Opening the page never gives up a place held
// in another room: the join asks nothing of the kind, and when the server answers waiting_elsewhere the
// page asks the visitor, and switches only on a click.
"use strict";

const root = document.getElementById("room");
const cfg = { join: root.dataset.join, events: root.dataset.events, target: root.dataset.target };
const $ = (id) => document.getElementById(id);
let stream;

function minutes(s) {
  if (s < 60) return "less than a minute";
  const m = Math.round(s / 60);
  return m === 1 ? "about a minute" : "about " + m + " minutes";
}

function show(s) {
  if (s.error) { $("message").textContent = s.error.message; return; }
  $("rejoin").hidden = true;
  $("elsewhere").hidden = true;
  $("keep").hidden = false;
  if (s.state === "waiting") {
    $("title").textContent = "You are in line";
    $("position").textContent = "#" + s.position;
    $("message").textContent = "Estimated wait: " + minutes(s.eta_seconds) + ".";
  } else if (s.state === "admitted") {
    $("title").textContent = "It is your turn";
    $("position").textContent = "";
    if (stream) stream.close();
    if (cfg.target) {
      $("message").textContent = "Taking you to the site…";
      const u = new URL(cfg.target);
      u.searchParams.set("rg_admission", s.admission_token);
      location.replace(u.toString());
    } else {
      $("message").textContent = "You have been admitted until " + new Date(s.expires_at).toLocaleTimeString() + ".";
    }
  } else {
    if (stream) stream.close();
    $("title").textContent = "You are not in line";
    $("position").textContent = "";
    $("message").textContent = "Your place has lapsed.";
    $("rejoin").hidden = false;
  }
}

// elsewhere asks the visitor whether to give up the place it holds in another room.
function elsewhere(other) {
  const page = "/r/" + encodeURIComponent(other);
  $("title").textContent = "You are already in a line";
  $("position").textContent = "";
  $("message").textContent = "";
  $("keep").hidden = true;
  $("other").textContent = other;
  $("other").href = page;
  $("stay").href = page;
  $("elsewhere").hidden = false;
  $("switch").focus();
}

async function join(switching) {
  $("message").textContent = "Joining…";
  const init = { method: "POST", credentials: "same-origin" };
  if (switching) {
    init.headers = { "Content-Type": "application/json" };
    init.body = JSON.stringify({ switch: true });
  }
  try {
    const r = await fetch(cfg.join, init);
    const s = await r.json();
    if (r.status === 409 && s.error && s.error.code === "waiting_elsewhere") {
      elsewhere(s.error.room);
      return;
    }
    show(s);
    if (r.ok && s.state === "waiting") {
      if (stream) stream.close();
      stream = new EventSource(cfg.events);
      stream.addEventListener("status", (e) => show(JSON.parse(e.data)));
    }
  } catch (e) {
    $("message").textContent = "Could not reach the waiting room; retrying…";
    setTimeout(() => join(switching), 3000);
  }
}

$("rejoin").addEventListener("click", () => join(false));
$("switch").addEventListener("click", () => join(true));
join(false);
