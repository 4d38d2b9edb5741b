// Per-role metrics.
export { roleMetrics, flattenRoleMetrics, type Summary, type RoleMetrics } from './role-metrics.ts';
