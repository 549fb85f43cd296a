DROP TABLE drivers;
DELETE FROM recovery_points WHERE endpoint IN ('drivers.create', 'drivers.onboarding_link');
DELETE FROM idempotent_endpoints WHERE name IN ('drivers.create', 'drivers.onboarding_link');
