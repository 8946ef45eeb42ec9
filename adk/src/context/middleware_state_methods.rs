//! Typed middleware state on both contexts: the same five methods on `TurnContext` and
//! `DispatchContext`, so a middleware reads and writes its state the same way in any pipeline.

/// Implements the middleware state methods on a context that has a `state: State` field.
macro_rules! middleware_state_methods {
    ($context:ty) => {
        impl $context {
            /// The middleware state of type `T`, or `None` when it is unset (see
            /// [`MiddlewareStates::get`](crate::middleware_state::MiddlewareStates::get)). A
            /// borrow of the context: the state cannot change while you hold it.
            ///
            /// ```rust,standalone_crate
            /// # use adk::middleware_state::MiddlewareState;
            /// #[derive(MiddlewareState, Default, Clone)]
            /// struct Breaker { failures: u32 }
            /// # let mut ctx = adk::TurnContext::new(
            /// #     adk::context::RawTurnContext::new("c", "p"),
            /// #     adk::storage::SharedStorage::new(adk::storage::NoopStorage::new()),
            /// #     Default::default(),
            /// # ).unwrap();
            /// assert!(ctx.middleware_state::<Breaker>().is_none());
            /// ctx.update_middleware_state::<Breaker>(|breaker| breaker.failures += 1)?;
            /// assert_eq!(ctx.middleware_state::<Breaker>().unwrap().failures, 1);
            /// # Ok::<(), adk::middleware_state::MiddlewareStateError>(())
            /// ```
            #[must_use]
            pub fn middleware_state<T: crate::middleware_state::MiddlewareState>(
                &self,
            ) -> Option<&T> {
                self.state.middleware_states().get::<T>()
            }

            /// Changes the middleware state of type `T` in place (from `T::default()` when it is
            /// unset); the change is visible at once to everything later in the turn. See
            /// [`MiddlewareStates::update`](crate::middleware_state::MiddlewareStates::update).
            ///
            /// # Errors
            ///
            /// [`MiddlewareStateError::Unreadable`](crate::middleware_state::MiddlewareStateError::Unreadable)
            /// when the turn loaded a record of `T` it could not read.
            pub fn update_middleware_state<T: crate::middleware_state::MiddlewareState>(
                &mut self,
                change: impl FnOnce(&mut T),
            ) -> Result<(), crate::middleware_state::MiddlewareStateError> {
                self.state.middleware_states_mut().update::<T>(change)
            }

            /// Changes the middleware state of type `T` through a change that may fail: on
            /// `Err` the state is left exactly as it was. See
            /// [`MiddlewareStates::try_update`](crate::middleware_state::MiddlewareStates::try_update).
            ///
            /// # Errors
            ///
            /// `change`'s error, or the state's
            /// [`MiddlewareStateError`](crate::middleware_state::MiddlewareStateError) as `E`.
            ///
            /// ```rust,standalone_crate
            /// # use adk::middleware_state::MiddlewareState;
            /// #[derive(MiddlewareState, Default, Clone)]
            /// struct Budget { spent: u32 }
            /// # let mut ctx = adk::TurnContext::new(
            /// #     adk::context::RawTurnContext::new("c", "p"),
            /// #     adk::storage::SharedStorage::new(adk::storage::NoopStorage::new()),
            /// #     Default::default(),
            /// # ).unwrap();
            /// let refused = ctx.try_update_middleware_state(|budget: &mut Budget| {
            ///     budget.spent += 500;
            ///     if budget.spent > 100 {
            ///         return Err(adk::pipeline::BoxError::from("over budget"));
            ///     }
            ///     Ok(())
            /// });
            /// assert!(refused.is_err());
            /// assert!(ctx.middleware_state::<Budget>().is_none()); // unchanged: still unset
            /// ```
            pub fn try_update_middleware_state<
                T: crate::middleware_state::MiddlewareState,
                E: From<crate::middleware_state::MiddlewareStateError>,
            >(
                &mut self,
                change: impl FnOnce(&mut T) -> Result<(), E>,
            ) -> Result<(), E> {
                self.state
                    .middleware_states_mut()
                    .try_update::<T, E>(change)
            }

            /// Every middleware state of the turn, to read several at once under one borrow.
            #[must_use]
            pub fn middleware_states(&self) -> &crate::middleware_state::MiddlewareStates {
                self.state.middleware_states()
            }

            /// Every middleware state of the turn, to change several in one step.
            pub fn middleware_states_mut(
                &mut self,
            ) -> &mut crate::middleware_state::MiddlewareStates {
                self.state.middleware_states_mut()
            }
        }
    };
}

pub(crate) use middleware_state_methods;
