import { ConfigError } from '@troupe/verifiers';
import onnxProto from 'onnx-proto';
import { LAYER_NORM_EPS, type NamedWeight, outputMask, type PolicyConfig } from '../policy/config.ts';

const { onnx } = onnxProto;
const FLOAT = 1;
const INT32 = 6;
const INT64 = 7;
/** The opset the graph is written for (LayerNormalization needs 17). */
export const ONNX_OPSET = 17;

/**
 * Writes the policy as an ONNX graph (opset 17) with the weights as initializers.
 *
 * Inputs: `tokens` int32 [batch, time] (dynamic axes) and `rows` int64 [n], flat indices
 * `b·time + t` of the positions whose logits are wanted. Output: `logits` float [n, vocab].
 * Computing the head only at the requested rows keeps sampling cheap (one row per sequence).
 */
export function exportOnnx(options: { config: PolicyConfig; weights: NamedWeight[] }): Uint8Array {
  const { config, weights } = options;
  const graph = new GraphBuilder(weights);
  const { positions, causal } = sequenceInputs(graph, config.contextLength);
  let x = graph.one('Add', [
    graph.one('Gather', [graph.weight('tok_emb'), 'tokens'], [intAttr('axis', 0)]),
    graph.one('Gather', [graph.weight('pos_emb'), positions], [intAttr('axis', 0)]),
  ]);
  const constants = layerConstants(graph, config, causal);
  for (let layer = 0; layer < config.layers; layer++) x = transformerLayer(graph, { x, layer, ...constants });
  const logits = outputHead(graph, x, config);
  graph.nodes.push({ opType: 'Identity', input: [logits], output: ['logits'], name: 'out' });
  return encodeModel(graph, config.vocabSize);
}

const intAttr = (name: string, i: number) => ({ name, type: onnx.AttributeProto.AttributeType.INT, i });
const floatAttr = (name: string, f: number) => ({ name, type: onnx.AttributeProto.AttributeType.FLOAT, f });
const intsAttr = (name: string, ints: number[]) => ({ name, type: onnx.AttributeProto.AttributeType.INTS, ints });

/** The graph being written: its nodes and initializers in the order they are added, node outputs named by a counter. */
class GraphBuilder {
  readonly initializers: onnxProto.onnx.ITensorProto[] = [];
  readonly nodes: onnxProto.onnx.INodeProto[] = [];
  private counter = 0;
  private readonly weights: Map<string, NamedWeight>;

  constructor(weights: readonly NamedWeight[]) {
    this.weights = new Map(weights.map((x) => [x.name, x]));
  }

  /** The policy weight `name` (a {@link TypeError} naming it when missing). */
  named(name: string): NamedWeight {
    const x = this.weights.get(name);
    if (!x) throw new ConfigError(`exportOnnx: missing weight ${name}`, { path: `weights.${name}` });
    return x;
  }

  floatInit(name: string, shape: number[], data: Float32Array): string {
    this.initializers.push({
      name,
      dims: shape,
      dataType: FLOAT,
      rawData: new Uint8Array(data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength)),
    });
    return name;
  }

  int64Init(name: string, shape: number[], data: number[]): string {
    this.initializers.push({ name, dims: shape, dataType: INT64, int64Data: data });
    return name;
  }

  /** The policy weight `name` as an initializer. */
  weight(name: string): string {
    const x = this.named(name);
    return this.floatInit(name, x.shape, x.data);
  }

  node(opType: string, inputs: string[], attrs: onnxProto.onnx.IAttributeProto[] = [], outputs = 1): string[] {
    const outs = Array.from({ length: outputs }, () => this.fresh(opType.toLowerCase()));
    this.nodes.push({ opType, input: inputs, output: outs, name: this.fresh(`n_${opType}`), attribute: attrs });
    return outs;
  }

  /** A node with one output. */
  one(opType: string, inputs: string[], attrs: onnxProto.onnx.IAttributeProto[] = []): string {
    return this.node(opType, inputs, attrs)[0] as string;
  }

  layerNorm(x: string, prefix: string): string {
    return this.one(
      'LayerNormalization',
      [x, this.weight(`${prefix}.g`), this.weight(`${prefix}.b`)],
      [intAttr('axis', -1), floatAttr('epsilon', LAYER_NORM_EPS)],
    );
  }

  linear(x: string, prefix: string): string {
    return this.one('Add', [this.one('MatMul', [x, this.weight(`${prefix}.w`)]), this.weight(`${prefix}.b`)]);
  }

  private fresh(base: string): string {
    return `${base}_${this.counter++}`;
  }
}

/** Positions and the causal mask, sized by the input's time axis (at most `tmax`). */
function sequenceInputs(graph: GraphBuilder, tmax: number): { positions: string; causal: string } {
  const shape = graph.one('Shape', ['tokens']);
  const tVec = graph.one('Slice', [shape, graph.int64Init('c_1v', [1], [1]), graph.int64Init('c_2v', [1], [2])]);
  const tScalar = graph.one('Squeeze', [tVec, graph.int64Init('c_axes0', [1], [0])]);
  const positions = graph.one('Range', [graph.int64Init('c_zero', [], [0]), tScalar, graph.int64Init('c_one', [], [1])]);
  const causalData = new Float32Array(tmax * tmax);
  for (let i = 0; i < tmax; i++) for (let j = i + 1; j < tmax; j++) causalData[i * tmax + j] = -1e9;
  const causal = graph.one('Slice', [
    graph.floatInit('causal', [tmax, tmax], causalData),
    graph.int64Init('c_00', [2], [0, 0]),
    graph.one('Concat', [tVec, tVec], [intAttr('axis', 0)]),
  ]);
  return { positions, causal };
}

/** What every transformer layer shares: the causal mask, the head split and merge shapes, the QKV split and the attention scale. */
interface LayerConstants {
  causal: string;
  headShape: string;
  mergeShape: string;
  splitSizes: string;
  scale: string;
}

function layerConstants(graph: GraphBuilder, config: PolicyConfig, causal: string): LayerConstants {
  const { dModel: d, heads } = config;
  const dh = d / heads;
  return {
    causal,
    headShape: graph.int64Init('c_heads', [4], [0, 0, heads, dh]),
    mergeShape: graph.int64Init('c_merge', [3], [0, 0, d]),
    splitSizes: graph.int64Init('c_split', [3], [d, d, d]),
    scale: graph.floatInit('c_scale', [], new Float32Array([1 / Math.sqrt(dh)])),
  };
}

/** Transformer layer `layer` over `x`: pre-norm causal self-attention, then a pre-norm ReLU MLP, each residual. */
function transformerLayer(graph: GraphBuilder, options: LayerConstants & { x: string; layer: number }): string {
  const { causal, headShape, mergeShape, splitSizes, scale, layer: l } = options;
  let { x } = options;
  const h = graph.layerNorm(x, `l${l}.ln1`);
  const qkv = graph.linear(h, `l${l}.qkv`);
  const [q, k, vv] = graph.node('Split', [qkv, splitSizes], [intAttr('axis', 2)], 3) as [string, string, string];
  const qh = graph.one('Transpose', [graph.one('Reshape', [q, headShape])], [intsAttr('perm', [0, 2, 1, 3])]);
  const kh = graph.one('Transpose', [graph.one('Reshape', [k, headShape])], [intsAttr('perm', [0, 2, 3, 1])]);
  const vh = graph.one('Transpose', [graph.one('Reshape', [vv, headShape])], [intsAttr('perm', [0, 2, 1, 3])]);
  const scores = graph.one('Add', [graph.one('Mul', [graph.one('MatMul', [qh, kh]), scale]), causal]);
  const att = graph.one('MatMul', [graph.one('Softmax', [scores], [intAttr('axis', -1)]), vh]);
  const merged = graph.one('Reshape', [graph.one('Transpose', [att], [intsAttr('perm', [0, 2, 1, 3])]), mergeShape]);
  x = graph.one('Add', [x, graph.linear(merged, `l${l}.proj`)]);
  const h2 = graph.layerNorm(x, `l${l}.ln2`);
  return graph.one('Add', [x, graph.linear(graph.one('Relu', [graph.linear(h2, `l${l}.fc1`)]), `l${l}.fc2`)]);
}

/** The logits at the requested `rows`: final norm, then the head with the output mask folded into its bias. */
function outputHead(graph: GraphBuilder, x: string, config: PolicyConfig): string {
  const flat = graph.one('Reshape', [x, graph.int64Init('c_flat', [2], [-1, config.dModel])]);
  const picked = graph.one('Gather', [flat, 'rows'], [intAttr('axis', 0)]);
  const hf = graph.layerNorm(picked, 'lnf');
  const headB = graph.named('head.b');
  const mask = outputMask(config);
  const biased = headB.data.map((b, i) => b + (mask[i] as number));
  return graph.one('Add', [
    graph.one('MatMul', [hf, graph.weight('head.w')]),
    graph.floatInit('head.b+mask', [config.vocabSize], biased),
  ]);
}

/** The model: the graph with its inputs (`tokens`, `rows`) and output (`logits` over a vocabulary of `v`), encoded. */
function encodeModel(graph: GraphBuilder, v: number): Uint8Array {
  const model = onnx.ModelProto.create({
    irVersion: 8,
    producerName: 'troupe',
    opsetImport: [{ domain: '', version: ONNX_OPSET }],
    graph: {
      name: 'policy',
      node: graph.nodes,
      initializer: graph.initializers,
      input: [
        {
          name: 'tokens',
          type: { tensorType: { elemType: INT32, shape: { dim: [{ dimParam: 'batch' }, { dimParam: 'time' }] } } },
        },
        { name: 'rows', type: { tensorType: { elemType: INT64, shape: { dim: [{ dimParam: 'n' }] } } } },
      ],
      output: [
        { name: 'logits', type: { tensorType: { elemType: FLOAT, shape: { dim: [{ dimParam: 'n' }, { dimValue: v }] } } } },
      ],
    },
  });
  return onnx.ModelProto.encode(model).finish();
}
