"""Compares the last functionResponse turn each model received (peer vs troupe)."""
import glob
import json
import sys

base = sys.argv[1] if len(sys.argv) > 1 else "."
def last_fr(bodies):
    for b in reversed(bodies):
        ps = b["contents"][-1]["parts"]
        if any("functionResponse" in p for p in ps): return ps
peer = last_fr([json.load(open(f)).get("body", json.load(open(f))) for f in sorted(glob.glob(f"{base}/peer/reqs/*.json"))])
tr = last_fr([json.loads(l) for l in open(f"{base}/troupe/requests.jsonl")])
print(len(peer), len(tr))
def norm(p):
    p = p.get("functionResponse", p)
    p = {k: v for k, v in p.items() if k != "id"}
    return json.dumps(p, ensure_ascii=False, sort_keys=True).replace(f"{base}/peer", "X").replace(f"{base}/troupe", "X")
same = 0
for i,(a,b) in enumerate(zip(peer,tr)):
    if norm(a) != norm(b):
        print("=== DIFF", i); print("PEER  :", norm(a)[:1200]); print("TROUPE:", norm(b)[:1200])
    else: same += 1
print("identical:", same)
