"""Token rate of the data generators against the trainer's CPU token rate (cpu-tiny-sized model).

    python benchmarks/bench_generators.py [--quick]

Trainer reference: one forward + backward + AdamW step of ihtrain.model.GPT (2 layers, 4 heads,
d = 128, vocab 512) at B = 16, C = 128, single thread. Generators are timed both as pure generators
(a pool chunk of 4096 sequences) and through their TokenSource (B = 16 sequences of C + 1 = 65).
A ratio >= 10 means generation is never the bottleneck.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def trainer_rate(steps: int) -> float:
    import torch

    from ihtrain.config import ModelConfig
    from ihtrain.model import GPT

    torch.set_num_threads(1)
    model = GPT(ModelConfig(n_layer=2, n_head=4, d_model=128, vocab_size=512, context=128))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    idx = torch.randint(0, 512, (16, 129))
    def step():
        _, loss = model(idx[:, :-1], idx[:, 1:])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    step()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    return steps * 16 * 128 / (time.perf_counter() - t0)


def rate(fn, n_tokens: int, reps: int) -> float:
    fn()
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    return reps * n_tokens / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = ap.parse_args()
    reps = 2 if args.quick else 5
    from ihtrain.data.biinduct import BiInductConfig, BiInductSource
    from ihtrain.data.markov import MarkovConfig, MarkovSource, build_chain, generate_markov
    from ihtrain.data.seminatural import BigramModel, SeminaturalConfig, SeminaturalSource, generate_seminatural

    ref = trainer_rate(5 if args.quick else 20)
    print(f"trainer (2L 4H d128 V512, B=16 C=128, fwd+bwd+AdamW, 1 thread): {ref:,.0f} tokens/s")
    rng = np.random.default_rng(0)
    stream = rng.integers(2, 514, size=500_000)  # stand-in natural stream for the bigram model
    bigram = BigramModel.from_tokens(stream, 500)
    chain, _ = build_chain(500, "markov", "zipf", entropy_rate=5.0, seed=0)
    rows = {
        "seminatural generator (4096 x 65)": (lambda: generate_seminatural(bigram, 4096, 65, 0.5, 0.5, rng), 4096 * 65),
        "markov chain generator (4096 x 65)": (lambda: generate_markov(chain, 4096, 65, seed=rng), 4096 * 65),
        "markov + freq/rel generator (4096 x 65)": (lambda: generate_markov(chain, 4096, 65, 0.5, 0.5, rng), 4096 * 65),
    }
    semi = SeminaturalSource(SeminaturalConfig(top_v=500), bigram=bigram, pool_tokens=200_000)
    mk = MarkovSource(MarkovConfig(vocab=500, entropy_rate=5.0, frequency=0.5, reliability=0.5), pool_tokens=200_000)
    semi.sample(rng, 16, 65), mk.sample(rng, 16, 65)  # build the pools (counted above as generator rate)
    rows["SeminaturalSource.sample (pool, 16 x 65)"] = (lambda: semi.sample(rng, 16, 65), 16 * 65)
    rows["MarkovSource.sample (pool, 16 x 65)"] = (lambda: mk.sample(rng, 16, 65), 16 * 65)
    fresh = SeminaturalSource(SeminaturalConfig(top_v=500), bigram=bigram, pool_tokens=0)
    rows["SeminaturalSource.sample (fresh, 16 x 65)"] = (lambda: fresh.sample(rng, 16, 65), 16 * 65)

    class Nat:
        vocab_size, special_tokens, ordinary_range, fingerprint = 512, {"eos": 0, "sep": 1}, (2, 512), {}
        def sample(self, rng, n, length, progress=0.0):
            return rng.integers(2, 512, size=(n, length)), {}
    bi = BiInductSource(Nat(), BiInductConfig(mode="balanced"))
    rows["BiInductSource.sample (16 x 129, incl. base)"] = (lambda: bi.sample(rng, 16, 129, 0.2), 16 * 129)
    for name, (fn, n) in rows.items():
        r = rate(fn, n, reps if n > 10_000 else 50 * reps)
        print(f"{name:46s} {r:>14,.0f} tokens/s   ratio {r / ref:8.1f}{'' if r / ref >= 10 else '  < 10!'}")


if __name__ == "__main__":
    main()
