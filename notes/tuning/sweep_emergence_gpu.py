import sys, os, time, math, json, itertools, numpy as np
import torch, torch.nn as nn, torch.nn.functional as F
import torch.multiprocessing as mp

def run(c):
    torch.manual_seed(0); dev=os.environ.get("DEV","cuda")
    V,B,C,d,H,L,ao,lr,maxs=c["V"],c["B"],c["C"],c["d"],c["H"],c["L"],c["ao"],c["lr"],c["max_steps"]
    data=torch.from_numpy(np.load(f".exp/tok{V}.npy").astype(np.int64)).to(dev)
    class Blk(nn.Module):
        def __init__(s):
            super().__init__(); s.ln1=nn.LayerNorm(d); s.qkv=nn.Linear(d,3*d); s.o=nn.Linear(d,d)
            if not ao: s.ln2=nn.LayerNorm(d); s.mlp=nn.Sequential(nn.Linear(d,4*d),nn.GELU(),nn.Linear(4*d,d))
        def forward(s,x,ret=False):
            Bb,T,_=x.shape; q,k,v=s.qkv(s.ln1(x)).split(d,2)
            q,k,v=[t.view(Bb,T,H,-1).transpose(1,2) for t in (q,k,v)]
            if ret:
                att=(q@k.transpose(-1,-2))/math.sqrt(q.shape[-1]); att=att.masked_fill(torch.ones(T,T,dtype=torch.bool,device=dev).triu(1),-1e9).softmax(-1); y=att@v
            else: y=F.scaled_dot_product_attention(q,k,v,is_causal=True); att=None
            x=x+s.o(y.transpose(1,2).reshape(Bb,T,d))
            if not ao: x=x+s.mlp(s.ln2(x))
            return x,att
    class M(nn.Module):
        def __init__(s):
            super().__init__(); s.te=nn.Embedding(V,d); s.pe=nn.Embedding(C,d); s.bl=nn.ModuleList([Blk() for _ in range(L)]); s.lnf=nn.LayerNorm(d)
            for n,p_ in s.named_parameters():
                if p_.dim()==2: nn.init.normal_(p_,0,0.02)
        def forward(s,idx,ret=False):
            x=s.te(idx)+s.pe(torch.arange(idx.shape[1],device=dev)); atts=[]
            for b in s.bl: x,att=b(x,ret); atts.append(att)
            return s.lnf(x)@s.te.weight.T, atts
    m=M().to(dev); opt=torch.optim.AdamW(m.parameters(),lr=lr,weight_decay=0.1,betas=(0.9,0.95))
    g=torch.Generator(device=dev); g.manual_seed(0)
    rng=np.random.default_rng(0)
    n=min(50,C//2); S=np.stack([rng.choice(np.arange(2,V),n,replace=False) for _ in range(100)]); probe=torch.tensor(np.concatenate([S,S],1),device=dev)
    def ps():
        m.eval()
        with torch.no_grad():
            lg,atts=m(probe,True); s=torch.arange(n,2*n,device=dev); best=0
            for att in atts: best=max(best,att[:,:,s,s-n+1].mean((0,2)).max().item())
            acc=(lg[:,n:2*n-1].argmax(-1)==probe[:,n+1:2*n]).float().mean().item()
        m.train(); return best,acc
    curve=[]; t0=time.time(); cross=None; warm=100; ar=torch.arange(C+1,device=dev)
    evs=sorted(set([int(x) for x in np.geomspace(1,maxs,60)])|set(range(0,maxs+1,max(1,maxs//150))))
    evset=set(evs)
    for step in range(maxs+1):
        if step in evset:
            p_,acc=ps(); curve.append((step,round(p_,4),round(acc,4)))
            with open(os.path.join(os.environ.get("OUT","."),"prog.jsonl"),"a") as f: f.write(json.dumps([c["tag"],step,round(p_,4),round(acc,4),round(time.time()-t0,1)])+"\n")
            if cross is None and p_>0.5: cross=step
            if cross is not None and step>=2*cross and step>=cross+500: break
        if step==maxs: break
        for gr in opt.param_groups: gr["lr"]=lr*min(1,(step+1)/warm)
        ix=torch.randint(0,len(data)-C-1,(B,),device=dev,generator=g); x=data[ix[:,None]+ar]
        lg,_=m(x[:,:-1]); loss=F.cross_entropy(lg.reshape(-1,V),x[:,1:].reshape(-1))
        opt.zero_grad(set_to_none=True); loss.backward(); torch.nn.utils.clip_grad_norm_(m.parameters(),1.0); opt.step()
    return dict(c, cross=cross, final_loss=loss.item(), wall=time.time()-t0, curve=curve)

def worker(q, out, lock):
    torch.set_num_threads(1)
    while True:
        try: c=q.get_nowait()
        except Exception: return
        try: r=run(c)
        except Exception as e: r=dict(c, error=repr(e))
        with lock:
            with open(out,"a") as f: f.write(json.dumps(r)+"\n")
        print(c["tag"], r.get("cross"), round(r.get("wall",0)), flush=True)

if __name__=="__main__":
    mp.set_start_method("spawn")
    cfgs=[]
    base=dict(V=300,B=16,C=128,d=64,H=4,L=2,ao=1,lr=3e-3,max_steps=12000)
    base=dict(V=512,B=16,C=128,d=128,H=4,L=2,ao=0,lr=1e-2,max_steps=8000)
    for ch in [{},dict(lr=2e-2),dict(lr=3e-2),dict(H=2),dict(H=2,lr=2e-2),dict(V=1024),dict(V=1024,lr=2e-2),dict(B=32),
               dict(C=256),dict(B=32,C=256,lr=2e-2),dict(B=64),dict(d=256),dict(C=64),dict(V=1024,B=32,C=256,lr=2e-2),dict(H=8),dict(ao=1,lr=2e-2)]:
        cfgs.append(dict(base,**ch,tag=" ".join(f"{k}={v}" for k,v in ch.items()) or "base"))
    # order: longest-first heuristic not needed
    q=mp.Queue()
    for c in cfgs: q.put(c)
    out=os.path.join(os.environ.get("OUT","."),"sweep.jsonl"); lock=mp.Lock()
    nw=int(sys.argv[1]) if len(sys.argv)>1 else 14
    ps_=[mp.Process(target=worker,args=(q,out,lock)) for _ in range(nw)]
    for p in ps_: p.start()
    for p in ps_: p.join()
