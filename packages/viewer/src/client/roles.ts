import type { ViewerRoleSummary } from './types.ts';

const PALETTE = ['#2563eb', '#d97706', '#7c3aed', '#059669', '#db2777', '#0891b2', '#65a30d', '#dc2626'];

/** The roles of a run (or of two compared runs): their colours and reward scales. */
export class Roles {
  readonly names: string[];
  private readonly byName: Map<string, ViewerRoleSummary>;

  constructor(roles: ViewerRoleSummary[]) {
    this.byName = new Map();
    for (const role of roles) if (!this.byName.has(role.name)) this.byName.set(role.name, role);
    this.names = [...this.byName.keys()];
  }

  get(name: string): ViewerRoleSummary | undefined {
    return this.byName.get(name);
  }

  /** The role's colour: by position in the run, or hashed for a name the run does not list. */
  color(name: string): string {
    const i = this.names.indexOf(name);
    if (i >= 0) return PALETTE[i % PALETTE.length]!;
    let hash = 0;
    for (const c of name) hash = (hash * 31 + c.charCodeAt(0)) >>> 0;
    return PALETTE[hash % PALETTE.length]!;
  }

  /** True when every reward of the role lies in [0, 1] (colour scale red → green). */
  unit(name: string): boolean {
    const role = this.byName.get(name);
    return !role || role.rewardMin === null || role.rewardMax === null || (role.rewardMin >= 0 && role.rewardMax <= 1);
  }
}
