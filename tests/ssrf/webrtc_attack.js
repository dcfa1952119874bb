// A probed page that tries every way we know to make the worker's Chromium send WebRTC (and WebTransport)
// packets around the guard's SOCKS proxy. Served by tests/ssrf/test_browser_webrtc.py, which prepends
// `const CONFIG = {origin, crossSiteOrigin, udpPort, tcpPort}`. Every attempt reports its outcome to
// CONFIG.origin + '/report' as {name: outcome}, so a test can tell "blocked" from "never tried":
//   'absent'              no constructor to call (our init script removed it, or the scope never had it)
//   'gathered N ...'      a peer connection was built and ICE gathering ran (N local candidates)
//   'checked ...'         a remote host candidate was added: Chromium may send STUN checks to it
//   'tried ...'           a WebTransport session was attempted
//   'threw ...'           the attempt failed with an exception
// Loaded by the top page, its frames and popups (<script src>), and the workers (importScripts).

const KINDS = {
  stun: () => [{urls: `stun:127.0.0.1:${CONFIG.udpPort}`}],
  'turn-udp': () => [{urls: `turn:127.0.0.1:${CONFIG.udpPort}?transport=udp`, username: 'u', credential: 'p'}],
  'turn-tcp': () => [{urls: `turn:127.0.0.2:${CONFIG.tcpPort}?transport=tcp`, username: 'u', credential: 'p'}],
  turns: () => [{urls: `turns:127.0.0.2:${CONFIG.tcpPort}?transport=tcp`, username: 'u', credential: 'p'}],
};
const REMOTE_CANDIDATE = () => `candidate:1 1 udp 2122260223 127.0.0.1 ${CONFIG.udpPort} typ host`;
const ICE_WAIT_MS = 3000;

function report(name, outcome) {
  return fetch(CONFIG.origin + '/report', {method: 'POST', mode: 'no-cors', body: JSON.stringify({[name]: outcome})})
    .catch(() => 0);
}

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));

async function gather(PC, iceServers) {
  const pc = new PC({iceServers});
  pc.createDataChannel('probe');
  await pc.setLocalDescription(await pc.createOffer());
  const complete = new Promise(resolve => {
    pc.addEventListener('icegatheringstatechange', () => pc.iceGatheringState === 'complete' && resolve());
  });
  await Promise.race([complete, sleep(ICE_WAIT_MS)]);
  return `gathered ${(pc.localDescription.sdp.match(/a=candidate/g) || []).length} candidates`;
}

// No ICE server at all: two connected peers, then a remote host candidate at the canary, so
// connectivity checks (STUN binding requests) would go straight to it.
async function checkRemoteCandidate(PC) {
  const a = new PC(), b = new PC();
  a.createDataChannel('probe');
  await a.setLocalDescription(await a.createOffer());
  await b.setRemoteDescription(a.localDescription);
  await b.setLocalDescription(await b.createAnswer());
  await a.setRemoteDescription(b.localDescription);
  await a.addIceCandidate({candidate: REMOTE_CANDIDATE(), sdpMid: '0', sdpMLineIndex: 0});
  await sleep(ICE_WAIT_MS);
  return `checked for ${ICE_WAIT_MS} ms`;
}

async function outcome(run) {
  try {
    return await run();
  } catch (e) {
    return 'threw ' + e;
  }
}

// Every WebRTC attempt with the constructor `PC` as found in the scope `where`.
function attackWith(where, PC) {
  const attempts = Object.entries(KINDS).map(([kind, servers]) =>
    outcome(() => typeof PC !== 'function' ? 'absent' : gather(PC, servers())).then(r => report(`${where}:${kind}`, r)));
  attempts.push(outcome(() => typeof PC !== 'function' ? 'absent' : checkRemoteCandidate(PC))
    .then(r => report(`${where}:remote-candidate`, r)));
  return Promise.all(attempts);
}

function tryWebTransport(name) {
  return outcome(async () => {
    if (typeof WebTransport !== 'function') return 'absent (secure context: ' + self.isSecureContext + ')';
    const session = new WebTransport(`https://127.0.0.1:${CONFIG.udpPort}/`);
    const closed = session.closed.then(() => 'closed', e => 'failed: ' + e);
    return 'tried, ' + await Promise.race([session.ready.then(() => 'connected', e => 'failed: ' + e), closed,
                                           sleep(ICE_WAIT_MS).then(() => 'no answer')]);
  }).then(r => report(name, r));
}

function inWorker(where) {
  const PC = self.RTCPeerConnection;
  return Promise.all([
    report(`${where}:webrtc`, typeof PC !== 'function' ? 'absent' : 'constructor present'),
    typeof PC === 'function' ? attackWith(where, PC) : null,
    tryWebTransport(`${where}:webtransport`),
  ]);
}

// A frame's document grabs the constructor in its first script, before anything else can run there.
function frameDocument(where) {
  return `<script>const GRABBED = window.RTCPeerConnection;<\/script>` +
         `<script>const CONFIG = ${JSON.stringify(CONFIG)};<\/script>` +
         `<script src="${CONFIG.origin}/attack.js"><\/script>` +
         `<script>attackWith(${JSON.stringify(where)}, GRABBED);<\/script>`;
}

function appendFrame(setup) {
  const frame = document.createElement('iframe');
  setup(frame);
  document.body.appendChild(frame);
  return frame;
}

// An about:blank child created and used synchronously: its Window exists before any navigation.
function blankChild(doc) {
  const frame = doc.createElement('iframe');
  doc.body.appendChild(frame);
  return frame.contentWindow;
}

function viaPrototypeChain() {
  for (let object = window; object; object = Object.getPrototypeOf(object)) {
    const name = Object.getOwnPropertyNames(object).find(n => /RTCPeerConnection$/.test(n));
    if (name) return object[name];
  }
}

function workerScript() {
  return `const CONFIG = ${JSON.stringify(CONFIG)}; importScripts('${CONFIG.origin}/attack.js');`;
}

function dedicatedWorker() {
  const source = workerScript() + " inWorker('dedicated-worker');";
  new Worker(URL.createObjectURL(new Blob([source], {type: 'text/javascript'})));
}

function sharedWorker() {
  const source = workerScript() + " onconnect = () => inWorker('shared-worker');";
  new SharedWorker(URL.createObjectURL(new Blob([source], {type: 'text/javascript'}))).port.start();
}

async function serviceWorker() {
  if (!('serviceWorker' in navigator)) return report('service-worker:webrtc', 'no service worker support');
  await navigator.serviceWorker.register('/sw.js');
  (await navigator.serviceWorker.ready).active.postMessage('attack');
}

// The top page: `grabbed` is what its first script found before anything else ran.
function attackFromTopPage(grabbed) {
  return Promise.all([
    attackWith('first-script', grabbed),
    attackWith('window', window.RTCPeerConnection),
    attackWith('webkit-prefixed', window.webkitRTCPeerConnection),
    attackWith('prototype-chain', viaPrototypeChain()),
    attackWith('blank-iframe', blankChild(document).RTCPeerConnection),
    attackWith('nested-blank-iframe', blankChild(blankChild(document).document).RTCPeerConnection),
    attackWith('blank-popup', (window.open('') || {}).RTCPeerConnection),
    appendFrame(f => { f.srcdoc = frameDocument('srcdoc-iframe'); }),
    appendFrame(f => { f.sandbox = 'allow-scripts'; f.srcdoc = frameDocument('sandboxed-srcdoc-iframe'); }),
    appendFrame(f => { f.sandbox = 'allow-scripts'; f.src = `/frame?where=sandboxed-iframe`; }),
    appendFrame(f => { f.src = 'data:text/html,' + encodeURIComponent(frameDocument('data-iframe')); }),
    appendFrame(f => {
      f.src = URL.createObjectURL(new Blob([frameDocument('blob-iframe')], {type: 'text/html'}));
    }),
    appendFrame(f => { f.src = `${CONFIG.crossSiteOrigin}/frame?where=cross-site-iframe`; }),
    window.open(`${CONFIG.origin}/frame?where=noopener-popup`, '_blank', 'noopener'),
    dedicatedWorker(),
    sharedWorker(),
    outcome(serviceWorker),
    tryWebTransport('window:webtransport'),
  ]);
}
