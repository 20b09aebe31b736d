// The release variant of docs/nginx/rushgate.conf (see rushgate-release.conf): nginx's njs module
// (Debian: libnginx-mod-http-js) passes a request to the origin and, when the origin's answer carries
// "Rushgate-Command: release", ends the visitor's admission with rushgate before the answer goes out,
// so that a finished checkout frees its place for the next visitor at once. The header itself never
// reaches the visitor.

// The request headers that name the visitor's admission: its cookie, a bearer token, or the URL the
// room's page sent the visitor back with.
function admission(r) {
    const auth = r.headersIn.Authorization || '';
    if (auth.startsWith('Bearer ')) {
        return auth.slice(7);
    }
    return r.variables.cookie_rg_admission || r.args.rg_admission || '';
}

// Headers that belong to one hop, or that nginx sets for the answer it writes itself.
// (An object rather than a Set: njs 0.7, Debian's, has no Set.)
const skip = { 'connection': true, 'keep-alive': true, 'transfer-encoding': true, 'content-length': true, 'rushgate-command': true };

async function release(r) {
    const reply = await r.subrequest('/_rushgate/origin' + r.uri, {
        method: r.method,
        args: r.variables.args || '',
        body: r.requestText || '',
    });
    const command = (reply.headersOut['Rushgate-Command'] || '').trim().toLowerCase();
    if (command === 'release') {
        const token = admission(r);
        if (token) {
            const done = await r.subrequest('/_rushgate/release', {
                method: 'POST',
                body: JSON.stringify({ admission_token: token }),
            });
            if (done.status !== 200) {
                r.error('rushgate: release answered ' + done.status + ': ' + done.responseText);
            }
        }
    }
    for (const name in reply.headersOut) {
        if (!skip[name.toLowerCase()]) {
            r.headersOut[name] = reply.headersOut[name];
        }
    }
    if (reply.status >= 301 && reply.status <= 308 && reply.status !== 304) {
        r.return(reply.status, reply.headersOut.Location || ''); // njs takes a redirect's text as its URL
        return;
    }
    r.return(reply.status, reply.responseText);
}

export default { release };
