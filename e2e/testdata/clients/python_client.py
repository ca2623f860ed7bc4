"""Drives edgeapi with the official Python client (Debian's python3-kubernetes).

Usage: python_client.py KUBECONFIG NAMESPACE

Loads KUBECONFIG as it is, then in NAMESPACE (which must exist and be
empty): lists, creates ConfigMaps py-a and py-b, gets and lists them, watches
from the first list's resourceVersion (replaying the two ADDED events),
deletes py-a while the watch is open and waits for its DELETED event,
and creates py-kept; it leaves py-b and py-kept for the caller to check. It prints one
line per step and exits non-zero on the first result that is not what it
should be.
"""

import sys

from kubernetes import client, config, watch


def check(what, got, want):
    if got != want:
        sys.exit(f"FAIL {what}: got {got!r}, want {want!r}")
    print(f"ok {what}: {got!r}")


def main():
    kubeconfig, ns = sys.argv[1], sys.argv[2]
    config.load_kube_config(config_file=kubeconfig)
    v1 = client.CoreV1Api()

    first = v1.list_namespaced_config_map(ns)
    check("first list", [cm.metadata.name for cm in first.items], [])
    rv = first.metadata.resource_version

    for name in ("py-a", "py-b"):
        body = client.V1ConfigMap(
            metadata=client.V1ObjectMeta(name=name, labels={"client": "python"}),
            data={"key": "value of " + name},
        )
        created = v1.create_namespaced_config_map(ns, body)
        check("create " + name, (created.metadata.name, created.data), (name, body.data))
        if not created.metadata.uid or not created.metadata.resource_version:
            sys.exit(f"FAIL create {name}: no uid or resourceVersion in {created.metadata}")

    got = v1.read_namespaced_config_map("py-a", ns)
    check("get py-a", (got.data, got.metadata.labels), ({"key": "value of py-a"}, {"client": "python"}))

    listed = v1.list_namespaced_config_map(ns, label_selector="client=python")
    check("list", sorted(cm.metadata.name for cm in listed.items), ["py-a", "py-b"])

    events = []
    w = watch.Watch()
    deleted = False
    for ev in w.stream(v1.list_namespaced_config_map, ns, resource_version=rv, timeout_seconds=60):
        events.append((ev["type"], ev["object"].metadata.name))
        print(f"event {ev['type']} {ev['object'].metadata.name}")
        if len(events) == 2 and not deleted:
            status = v1.delete_namespaced_config_map("py-a", ns)
            check("delete py-a status", status.status, "Success")
            deleted = True
        if len(events) == 3:
            w.stop()
    check("watch events", events, [("ADDED", "py-a"), ("ADDED", "py-b"), ("DELETED", "py-a")])

    try:
        v1.read_namespaced_config_map("py-a", ns)
        sys.exit("FAIL get py-a after delete: found, want 404")
    except client.exceptions.ApiException as e:
        check("get py-a after delete", e.status, 404)

    kept = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="py-kept"), data={"written-by": "python"})
    v1.create_namespaced_config_map(ns, kept)
    print("done")


if __name__ == "__main__":
    main()
