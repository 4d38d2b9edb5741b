// Test utilities: the scripted model server and conformance suites.
export {};
