// rpcscope's grpc-js test client: TARGET CALLS [SERVICE_CONFIG_JSON [CALL_ID_PREFIX]].
// Makes CALLS sequential /rpcscope.lab.Lab/Call calls over TLS with the default roots, an empty request each,
// and nothing else: the proxy (grpc_proxy) and the roots (GRPC_DEFAULT_SSL_ROOTS_FILE_PATH) come from the
// environment, as a user's unchanged client gets them. Prints "ok N" when all N succeeded; otherwise the
// first failure's code and details on stderr, and exits 1.
'use strict';
const grpc = require('@grpc/grpc-js');

const [target, callsArg, serviceConfig, idPrefix] = process.argv.slice(2);
const calls = Number(callsArg || 1);
const options = serviceConfig ? { 'grpc.service_config': serviceConfig } : {};
const client = new grpc.Client(target, grpc.credentials.createSsl(), options);
const identity = (b) => b;

function call(i) {
  return new Promise((resolve, reject) => {
    const md = new grpc.Metadata();
    if (idPrefix) md.set('rpcscope-call-id', `${idPrefix}-${i}`);
    client.makeUnaryRequest('/rpcscope.lab.Lab/Call', identity, identity, Buffer.alloc(0), md,
      { deadline: Date.now() + 10000 }, (err) => (err ? reject(err) : resolve()));
  });
}

(async () => {
  for (let i = 1; i <= calls; ++i) await call(i);
  console.log(`ok ${calls}`);
})().catch((err) => {
  console.error(`call failed: code ${err.code}: ${err.details}`);
  process.exitCode = 1;
}).finally(() => client.close());
