// Drives edgeapi with @kubernetes/client-node.
//
// Usage: node client_node.mjs KUBECONFIG NAMESPACE
//
// Loads KUBECONFIG as it is, then in NAMESPACE (which must exist and be
// empty): lists, creates ConfigMaps js-a and js-b, gets and lists them,
// watches from the first list's resourceVersion (replaying the two ADDED
// events), deletes js-a while the watch is open and waits for its DELETED
// event, and creates js-kept; it leaves js-b and js-kept for the caller to check. It
// prints one line per step and exits non-zero on the first result that is
// not what it should be. @kubernetes/client-node is resolved from the
// node_modules next to this file (the test links it there).

import * as k8s from '@kubernetes/client-node';

const [kubeconfig, ns] = process.argv.slice(2);

function check(what, got, want) {
  const g = JSON.stringify(got);
  const w = JSON.stringify(want);
  if (g !== w) {
    console.log(`FAIL ${what}: got ${g}, want ${w}`);
    process.exit(1);
  }
  console.log(`ok ${what}: ${g}`);
}

async function main() {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(kubeconfig);
  const v1 = kc.makeApiClient(k8s.CoreV1Api);

  const first = await v1.listNamespacedConfigMap({ namespace: ns });
  check('first list', first.items.map((cm) => cm.metadata.name), []);
  const rv = first.metadata.resourceVersion;

  for (const name of ['js-a', 'js-b']) {
    const body = {
      metadata: { name, labels: { client: 'node' } },
      data: { key: `value of ${name}` },
    };
    const created = await v1.createNamespacedConfigMap({ namespace: ns, body });
    check(`create ${name}`, [created.metadata.name, created.data], [name, body.data]);
    if (!created.metadata.uid || !created.metadata.resourceVersion) {
      console.log(`FAIL create ${name}: no uid or resourceVersion in ${JSON.stringify(created.metadata)}`);
      process.exit(1);
    }
  }

  const got = await v1.readNamespacedConfigMap({ name: 'js-a', namespace: ns });
  check('get js-a', [got.data, got.metadata.labels], [{ key: 'value of js-a' }, { client: 'node' }]);

  const listed = await v1.listNamespacedConfigMap({ namespace: ns, labelSelector: 'client=node' });
  check('list', listed.items.map((cm) => cm.metadata.name).sort(), ['js-a', 'js-b']);

  // The watch: replay from rv, then a live DELETED.
  const events = [];
  let abort;
  const watchDone = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`watch: only ${JSON.stringify(events)} after 60s`)), 60000);
    new k8s.Watch(kc)
      .watch(
        `/api/v1/namespaces/${ns}/configmaps`,
        { resourceVersion: rv, allowWatchBookmarks: true },
        (type, obj) => {
          if (type === 'BOOKMARK') return;
          events.push([type, obj.metadata.name]);
          console.log(`event ${type} ${obj.metadata.name}`);
          if (events.length === 2) {
            v1.deleteNamespacedConfigMap({ name: 'js-a', namespace: ns })
              .then((status) => check('delete js-a status', status.status, 'Success'))
              .catch(reject);
          }
          if (events.length === 3) {
            clearTimeout(timer);
            resolve();
          }
        },
        (err) => {
          if (events.length < 3) {
            clearTimeout(timer);
            reject(new Error(`watch ended after ${JSON.stringify(events)}: ${err}`));
          }
        },
      )
      .then((ac) => { abort = ac; }, reject);
  });
  await watchDone;
  abort.abort();
  check('watch events', events, [['ADDED', 'js-a'], ['ADDED', 'js-b'], ['DELETED', 'js-a']]);

  try {
    await v1.readNamespacedConfigMap({ name: 'js-a', namespace: ns });
    console.log('FAIL get js-a after delete: found, want 404');
    process.exit(1);
  } catch (e) {
    check('get js-a after delete', e.code, 404);
  }

  await v1.createNamespacedConfigMap({
    namespace: ns,
    body: { metadata: { name: 'js-kept' }, data: { 'written-by': 'node' } },
  });
  console.log('done');
}

main().catch((e) => {
  console.log(`FAIL ${e && e.stack ? e.stack : e}`);
  if (e && e.body) console.log(`body: ${typeof e.body === 'string' ? e.body : JSON.stringify(e.body)}`);
  process.exit(1);
});
