//! The pages a person sees: the rider's return from authentication, the
//! simulated bank's page, both in a real browser, and the simulated
//! gateway's onboarding page.

mod authentication_page;
mod browser;
mod onboarding_page;
mod payment_return;
