"""The demo's scenarios: loading and checking the bundled scenario files, and seeding the store from one."""
