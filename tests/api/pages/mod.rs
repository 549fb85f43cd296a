//! The pages a person sees: the rider's return from authentication, the
//! simulated bank's page, both in a real browser.

mod authentication_page;
mod browser;
mod payment_return;
